package registration

import "github.com/apikit-dev/apikit/meta"

// The mutating policy resources of the group.
var (
	MutatingAdmissionPolicies       = meta.GroupResource{Group: GroupName, Resource: "mutatingadmissionpolicies"}
	MutatingAdmissionPolicyBindings = meta.GroupResource{Group: GroupName, Resource: "mutatingadmissionpolicybindings"}
)

// MutatingAdmissionPolicy is a set of CEL mutations of the writes its
// matchConstraints match, in force where a binding names it.
type MutatingAdmissionPolicy struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            MutatingAdmissionPolicySpec `json:"spec,omitempty" protobuf:"2"`
}

// MutatingAdmissionPolicyList is a list of MutatingAdmissionPolicies.
type MutatingAdmissionPolicyList struct {
	meta.TypeMeta `json:",inline"`
	meta.ListMeta `json:"metadata,omitempty"`
	Items         []MutatingAdmissionPolicy `json:"items"`
}

// MutatingAdmissionPolicySpec is what a policy changes and on which
// writes.
type MutatingAdmissionPolicySpec struct {
	ParamKind          *ParamKind             `json:"paramKind,omitempty" protobuf:"1"`
	MatchConstraints   *MatchResources        `json:"matchConstraints,omitempty" protobuf:"2"`
	Variables          []Variable             `json:"variables,omitempty" listType:"atomic" protobuf:"3"`
	Mutations          []Mutation             `json:"mutations,omitempty" listType:"atomic" protobuf:"4"`
	FailurePolicy      *FailurePolicyType     `json:"failurePolicy,omitempty" protobuf:"5"`
	MatchConditions    []MatchCondition       `json:"matchConditions,omitempty" patchStrategy:"merge" patchMergeKey:"name" listType:"map" listMapKeys:"name" protobuf:"6"`
	ReinvocationPolicy ReinvocationPolicyType `json:"reinvocationPolicy,omitempty" protobuf:"7"`
}

// Mutation is one CEL expression that changes the object: an apply
// configuration merged into it, or a JSON Patch applied to it.
type Mutation struct {
	PatchType          PatchType           `json:"patchType" protobuf:"2"`
	ApplyConfiguration *ApplyConfiguration `json:"applyConfiguration,omitempty" protobuf:"3"`
	JSONPatch          *JSONPatch          `json:"jsonPatch,omitempty" protobuf:"4"`
}

// PatchType is how a mutation changes the object.
type PatchType string

// The patch types.
const (
	PatchTypeApplyConfiguration PatchType = "ApplyConfiguration"
	PatchTypeJSONPatch          PatchType = "JSONPatch"
)

// ApplyConfiguration is an expression building an Object{...} that is
// merged into the object with server-side apply's merge.
type ApplyConfiguration struct {
	Expression string `json:"expression,omitempty" protobuf:"1"`
}

// JSONPatch is an expression building a list of JSONPatch{...}
// operations applied to the object.
type JSONPatch struct {
	Expression string `json:"expression,omitempty" protobuf:"1"`
}

// MutatingAdmissionPolicyBinding puts a mutating policy in force on the
// writes its matchResources match.
type MutatingAdmissionPolicyBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            MutatingAdmissionPolicyBindingSpec `json:"spec,omitempty" protobuf:"2"`
}

// MutatingAdmissionPolicyBindingList is a list of bindings.
type MutatingAdmissionPolicyBindingList struct {
	meta.TypeMeta `json:",inline"`
	meta.ListMeta `json:"metadata,omitempty"`
	Items         []MutatingAdmissionPolicyBinding `json:"items"`
}

// MutatingAdmissionPolicyBindingSpec names the policy, its parameters and
// where it applies.
type MutatingAdmissionPolicyBindingSpec struct {
	PolicyName     string          `json:"policyName,omitempty" protobuf:"1"`
	ParamRef       *ParamRef       `json:"paramRef,omitempty" protobuf:"2"`
	MatchResources *MatchResources `json:"matchResources,omitempty" protobuf:"3"`
}
