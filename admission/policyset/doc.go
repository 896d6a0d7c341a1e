// Package policyset is what kube-apiserver's two admission policy plugins
// share (its k8s.io/apiserver .../policy/generic and .../policy/matching):
// the set of policies and bindings in effect, each policy generation
// compiled once by its plugin (Source, kept equal to the stored objects by
// informers); matchConstraints and a binding's matchResources (Matcher);
// the params a binding's paramRef selects from an informer per paramKind
// over any resource the server chain serves (CollectParams); the
// namespaceObject of a write; and the evaluation of the compiled
// matchConditions and variables (Expr). Package admission/policy
// (ValidatingAdmissionPolicy) and package admission/mutatingpolicy
// (MutatingAdmissionPolicy) are its two users; each adds what its kind
// does with a matched write (validations, mutations). Matching rules and
// the CEL view of a write are package admission/webhook's.
package policyset
