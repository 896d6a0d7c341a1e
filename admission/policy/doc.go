// Package policy is kube-apiserver's ValidatingAdmissionPolicy admission
// plugin: the ValidatingAdmissionPolicies and bindings of
// admissionregistration.k8s.io/v1 (package admission/registration),
// compiled once per policy generation with package cel and evaluated on
// every write their matchConstraints, the binding's matchResources and the
// policy's matchConditions match, once per param the binding's paramRef
// selects (an informer per paramKind over any resource the server chain
// serves) with the write's namespace as namespaceObject; the set of
// policies and bindings, matching, params and the matchConditions and
// variables are package admission/policyset's, shared with
// MutatingAdmissionPolicy. A
// failed validation denies the write, warns the client or annotates the
// audit event, as the binding's validationActions say. Each policy
// generation is also type-checked against the schemas of the kinds it
// matches into its status.typeChecking (typecheck.go), as kube's policy
// type-checking controller does. The CEL view of a write is package
// admission/webhook's, shared with the webhooks.
package policy
