// Package registration is admissionregistration.k8s.io/v1's webhook
// configurations: MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration, wire-identical to kube-apiserver's, with
// its defaulting and validation (its messages and field paths), and their
// stores. Package admission/webhook calls the webhooks they name; a server
// serves them with server/system.InstallAdmissionRegistration.
package registration
