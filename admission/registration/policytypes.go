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
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            ValidatingAdmissionPolicySpec   `json:"spec,omitempty"`
	Status          ValidatingAdmissionPolicyStatus `json:"status,omitempty"`
}

// ValidatingAdmissionPolicyList is a list of ValidatingAdmissionPolicies.
type ValidatingAdmissionPolicyList struct {
	meta.TypeMeta `json:",inline"`
	meta.ListMeta `json:"metadata,omitempty"`
	Items         []ValidatingAdmissionPolicy `json:"items"`
}

// ValidatingAdmissionPolicySpec is what a policy checks and on which writes.
type ValidatingAdmissionPolicySpec struct {
	ParamKind        *ParamKind         `json:"paramKind,omitempty"`
	MatchConstraints *MatchResources    `json:"matchConstraints,omitempty"`
	Validations      []Validation       `json:"validations,omitempty"`
	FailurePolicy    *FailurePolicyType `json:"failurePolicy,omitempty"`
	AuditAnnotations []AuditAnnotation  `json:"auditAnnotations,omitempty"`
	MatchConditions  []MatchCondition   `json:"matchConditions,omitempty" patchStrategy:"merge" patchMergeKey:"name" listType:"map" listMapKeys:"name"`
	Variables        []Variable         `json:"variables,omitempty"`
}

// ValidatingAdmissionPolicyStatus is the policy's type checking (written
// by package admission/policy) and conditions.
type ValidatingAdmissionPolicyStatus struct {
	ObservedGeneration int64         `json:"observedGeneration,omitempty"`
	TypeChecking       *TypeChecking `json:"typeChecking,omitempty"`
	Conditions         []Condition   `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" listType:"map" listMapKeys:"type"`
}

// TypeChecking holds the warnings of checking a policy's expressions
// against the types of the resources it matches.
type TypeChecking struct {
	ExpressionWarnings []ExpressionWarning `json:"expressionWarnings,omitempty"`
}

// ExpressionWarning is one type checking warning.
type ExpressionWarning struct {
	FieldRef string `json:"fieldRef"`
	Warning  string `json:"warning"`
}

// Condition is metav1.Condition.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	ObservedGeneration int64     `json:"observedGeneration,omitempty"`
	LastTransitionTime meta.Time `json:"lastTransitionTime"`
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
}

// ParamKind is the kind of the objects that parameterize a policy.
type ParamKind struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// Validation is one CEL expression that must be true for a write to pass.
type Validation struct {
	Expression        string             `json:"expression"`
	Message           string             `json:"message,omitempty"`
	Reason            *meta.StatusReason `json:"reason,omitempty"`
	MessageExpression string             `json:"messageExpression,omitempty"`
}

// Variable is a named CEL expression the others read as variables.<name>.
type Variable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// AuditAnnotation is an audit annotation a policy adds, its value a CEL
// expression.
type AuditAnnotation struct {
	Key             string `json:"key"`
	ValueExpression string `json:"valueExpression"`
}

// MatchResources selects writes by resource rules and by the labels of
// the namespace and the object.
type MatchResources struct {
	NamespaceSelector    *meta.LabelSelector       `json:"namespaceSelector,omitempty"`
	ObjectSelector       *meta.LabelSelector       `json:"objectSelector,omitempty"`
	ResourceRules        []NamedRuleWithOperations `json:"resourceRules,omitempty"`
	ExcludeResourceRules []NamedRuleWithOperations `json:"excludeResourceRules,omitempty"`
	MatchPolicy          *MatchPolicyType          `json:"matchPolicy,omitempty"`
}

// NamedRuleWithOperations is a RuleWithOperations limited to some names
// (all when empty).
type NamedRuleWithOperations struct {
	ResourceNames      []string `json:"resourceNames,omitempty"`
	RuleWithOperations `json:",inline"`
}

// ValidatingAdmissionPolicyBinding puts a policy in force on the writes
// its matchResources match, with its validation actions.
type ValidatingAdmissionPolicyBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            ValidatingAdmissionPolicyBindingSpec `json:"spec,omitempty"`
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
	PolicyName        string             `json:"policyName,omitempty"`
	ParamRef          *ParamRef          `json:"paramRef,omitempty"`
	MatchResources    *MatchResources    `json:"matchResources,omitempty"`
	ValidationActions []ValidationAction `json:"validationActions,omitempty" listType:"set"`
}

// ParamRef finds a binding's parameter objects.
type ParamRef struct {
	Name                    string                       `json:"name,omitempty"`
	Namespace               string                       `json:"namespace,omitempty"`
	Selector                *meta.LabelSelector          `json:"selector,omitempty"`
	ParameterNotFoundAction *ParameterNotFoundActionType `json:"parameterNotFoundAction,omitempty"`
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
