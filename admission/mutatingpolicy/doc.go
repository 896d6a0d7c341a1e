// Package mutatingpolicy is kube-apiserver's MutatingAdmissionPolicy
// admission plugin: the mutations of the MutatingAdmissionPolicies that
// a MutatingAdmissionPolicyBinding puts in force (package
// admission/registration serves both), evaluated with package cel in the
// mutating phase of admission, before the mutating webhooks.
//
// An ApplyConfiguration mutation builds an Object{...} that is merged into
// the object with server-side apply's merge (structured-merge-diff, typed
// by the resource's schema; no managedFields are recorded); a JSONPatch
// mutation builds JSONPatch{op:, path:, value:} operations applied to the
// object's JSON. A policy runs once per param its binding's paramRef
// selects. The set of policies and bindings, matching (matchConstraints, a
// binding's matchResources), params, matchConditions and variables are
// package admission/policyset's, shared with ValidatingAdmissionPolicy;
// the CEL view of a write (object, oldObject, request) is
// admission/webhook's. See docs/admission.md.
package mutatingpolicy
