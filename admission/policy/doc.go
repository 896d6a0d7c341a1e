// Package policy is kube-apiserver's ValidatingAdmissionPolicy admission
// plugin: the ValidatingAdmissionPolicies and bindings of
// admissionregistration.k8s.io/v1 (package admission/registration),
// compiled once per policy generation with package cel and evaluated on
// every write their matchConstraints, the binding's matchResources and the
// policy's matchConditions match. A failed validation denies the write,
// warns the client or annotates the audit event, as the binding's
// validationActions say. Matching and the CEL view of a write are package
// admission/webhook's, shared with the webhooks.
package policy
