package registration

import "github.com/apikit-dev/apikit/meta"

// The policy resources of the group.
var (
	ValidatingAdmissionPolicies       = meta.GroupResource{Group: GroupName, Resource: "validatingadmissionpolicies"}
	ValidatingAdmissionPolicyBindings = meta.GroupResource{Group: GroupName, Resource: "validatingadmissionpolicybindings"}
)

// ValidatingAdmissionPolicy is a set of CEL validations of the writes its
// matchConstraints match, in force where a binding names it.
type ValidatingAdmissionPolicy struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            ValidatingAdmissionPolicySpec   `json:"spec,omitempty" protobuf:"2"`
	Status          ValidatingAdmissionPolicyStatus `json:"status,omitempty" protobuf:"3"`
}

// ValidatingAdmissionPolicyList is a list of ValidatingAdmissionPolicies.
type ValidatingAdmissionPolicyList struct {
	meta.TypeMeta `json:",inline"`
	meta.ListMeta `json:"metadata,omitempty"`
	Items         []ValidatingAdmissionPolicy `json:"items"`
}

// ValidatingAdmissionPolicySpec is what a policy checks and on which writes.
type ValidatingAdmissionPolicySpec struct {
	ParamKind        *ParamKind         `json:"paramKind,omitempty" protobuf:"1"`
	MatchConstraints *MatchResources    `json:"matchConstraints,omitempty" protobuf:"2"`
	Validations      []Validation       `json:"validations,omitempty" protobuf:"3"`
	FailurePolicy    *FailurePolicyType `json:"failurePolicy,omitempty" protobuf:"4"`
	AuditAnnotations []AuditAnnotation  `json:"auditAnnotations,omitempty" protobuf:"5"`
	MatchConditions  []MatchCondition   `json:"matchConditions,omitempty" patchStrategy:"merge" patchMergeKey:"name" listType:"map" listMapKeys:"name" protobuf:"6"`
	Variables        []Variable         `json:"variables,omitempty" protobuf:"7"`
}

// ValidatingAdmissionPolicyStatus is the policy's type checking (written
// by package admission/policy) and conditions.
type ValidatingAdmissionPolicyStatus struct {
	ObservedGeneration int64         `json:"observedGeneration,omitempty" protobuf:"1"`
	TypeChecking       *TypeChecking `json:"typeChecking,omitempty" protobuf:"2"`
	Conditions         []Condition   `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" listType:"map" listMapKeys:"type" protobuf:"3"`
}

// TypeChecking holds the warnings of checking a policy's expressions
// against the types of the resources it matches.
type TypeChecking struct {
	ExpressionWarnings []ExpressionWarning `json:"expressionWarnings,omitempty" protobuf:"1"`
}

// ExpressionWarning is one type checking warning.
type ExpressionWarning struct {
	FieldRef string `json:"fieldRef" protobuf:"2"`
	Warning  string `json:"warning" protobuf:"3"`
}

// Condition is metav1.Condition.
type Condition struct {
	Type               string    `json:"type" protobuf:"1"`
	Status             string    `json:"status" protobuf:"2"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty" protobuf:"3"`
	LastTransitionTime meta.Time `json:"lastTransitionTime" protobuf:"4"`
	Reason             string    `json:"reason" protobuf:"5"`
	Message            string    `json:"message" protobuf:"6"`
}

// ParamKind is the kind of the objects that parameterize a policy.
type ParamKind struct {
	APIVersion string `json:"apiVersion,omitempty" protobuf:"1"`
	Kind       string `json:"kind,omitempty" protobuf:"2"`
}

// Validation is one CEL expression that must be true for a write to pass.
type Validation struct {
	Expression        string             `json:"expression" protobuf:"1"`
	Message           string             `json:"message,omitempty" protobuf:"2"`
	Reason            *meta.StatusReason `json:"reason,omitempty" protobuf:"3"`
	MessageExpression string             `json:"messageExpression,omitempty" protobuf:"4"`
}

// Variable is a named CEL expression the others read as variables.<name>.
type Variable struct {
	Name       string `json:"name" protobuf:"1"`
	Expression string `json:"expression" protobuf:"2"`
}

// AuditAnnotation is an audit annotation a policy adds, its value a CEL
// expression.
type AuditAnnotation struct {
	Key             string `json:"key" protobuf:"1"`
	ValueExpression string `json:"valueExpression" protobuf:"2"`
}

// MatchResources selects writes by resource rules and by the labels of
// the namespace and the object.
type MatchResources struct {
	NamespaceSelector    *meta.LabelSelector       `json:"namespaceSelector,omitempty" protobuf:"1"`
	ObjectSelector       *meta.LabelSelector       `json:"objectSelector,omitempty" protobuf:"2"`
	ResourceRules        []NamedRuleWithOperations `json:"resourceRules,omitempty" protobuf:"3"`
	ExcludeResourceRules []NamedRuleWithOperations `json:"excludeResourceRules,omitempty" protobuf:"4"`
	MatchPolicy          *MatchPolicyType          `json:"matchPolicy,omitempty" protobuf:"7"`
}

// NamedRuleWithOperations is a RuleWithOperations limited to some names
// (all when empty).
type NamedRuleWithOperations struct {
	ResourceNames      []string `json:"resourceNames,omitempty" protobuf:"1"`
	RuleWithOperations `json:",inline" protobuf:"2"`
}

// ValidatingAdmissionPolicyBinding puts a policy in force on the writes
// its matchResources match, with its validation actions.
type ValidatingAdmissionPolicyBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            ValidatingAdmissionPolicyBindingSpec `json:"spec,omitempty" protobuf:"2"`
}

// ValidatingAdmissionPolicyBindingList is a list of bindings.
type ValidatingAdmissionPolicyBindingList struct {
	meta.TypeMeta `json:",inline"`
	meta.ListMeta `json:"metadata,omitempty"`
	Items         []ValidatingAdmissionPolicyBinding `json:"items"`
}

// ValidatingAdmissionPolicyBindingSpec names the policy, its parameters,
// where it applies and what a failed validation does.
type ValidatingAdmissionPolicyBindingSpec struct {
	PolicyName        string             `json:"policyName,omitempty" protobuf:"1"`
	ParamRef          *ParamRef          `json:"paramRef,omitempty" protobuf:"2"`
	MatchResources    *MatchResources    `json:"matchResources,omitempty" protobuf:"3"`
	ValidationActions []ValidationAction `json:"validationActions,omitempty" listType:"set" protobuf:"4"`
}

// ParamRef finds a binding's parameter objects.
type ParamRef struct {
	Name                    string                       `json:"name,omitempty" protobuf:"1"`
	Namespace               string                       `json:"namespace,omitempty" protobuf:"2"`
	Selector                *meta.LabelSelector          `json:"selector,omitempty" protobuf:"3"`
	ParameterNotFoundAction *ParameterNotFoundActionType `json:"parameterNotFoundAction,omitempty" protobuf:"4"`
}

// ParameterNotFoundActionType says what a binding does when its params
// are missing.
type ParameterNotFoundActionType string

// The parameter-not-found actions.
const (
	AllowAction ParameterNotFoundActionType = "Allow"
	DenyAction  ParameterNotFoundActionType = "Deny"
)

// ValidationAction is what a failed validation of a binding does.
type ValidationAction string

// The validation actions: Deny refuses the write, Warn returns a warning
// to the client, Audit records the failure in the audit event.
const (
	Deny  ValidationAction = "Deny"
	Warn  ValidationAction = "Warn"
	Audit ValidationAction = "Audit"
)
