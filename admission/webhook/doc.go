// Package webhook is kube-apiserver's MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook admission plugins: for every write, the
// webhooks of the stored MutatingWebhookConfigurations (in order, by
// configuration name) and ValidatingWebhookConfigurations (in parallel)
// whose rules, selectors and match conditions match it are sent an
// AdmissionReview v1 over HTTPS, at a URL or behind a Service, through one
// shared client per CA bundle (connections kept, no TLS handshake per
// call) built on internal/webhook. A mutating webhook's JSONPatch is
// applied to the object, which is decoded again; a refusal answers with
// kube-apiserver's messages, and a webhook that cannot be called refuses
// the write or lets it pass by its failurePolicy.
//
// The configurations are followed by a Source (an informer per kind), so
// a change takes effect on every server sharing the storage as soon as its
// watch delivers it.
package webhook
