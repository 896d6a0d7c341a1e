package registration

import "github.com/apikit-dev/apikit/meta"

// GroupName is the API group of the admission configuration.
const GroupName = "admissionregistration.k8s.io"

// Version is the served (and stored) version.
const Version = "v1"

// The resources of the group.
var (
	MutatingWebhookConfigurations   = meta.GroupResource{Group: GroupName, Resource: "mutatingwebhookconfigurations"}
	ValidatingWebhookConfigurations = meta.GroupResource{Group: GroupName, Resource: "validatingwebhookconfigurations"}
)

// MutatingWebhookConfiguration names webhooks that may change the objects
// of the writes their rules match.
type MutatingWebhookConfiguration struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Webhooks        []MutatingWebhook `json:"webhooks,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"2"`
}

// MutatingWebhookConfigurationList is a list of MutatingWebhookConfigurations.
type MutatingWebhookConfigurationList struct {
	meta.TypeMeta `json:",inline"`
	meta.ListMeta `json:"metadata,omitempty"`
	Items         []MutatingWebhookConfiguration `json:"items"`
}

// ValidatingWebhookConfiguration names webhooks that may refuse the
// writes their rules match.
type ValidatingWebhookConfiguration struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Webhooks        []ValidatingWebhook `json:"webhooks,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"2"`
}

// ValidatingWebhookConfigurationList is a list of ValidatingWebhookConfigurations.
type ValidatingWebhookConfigurationList struct {
	meta.TypeMeta `json:",inline"`
	meta.ListMeta `json:"metadata,omitempty"`
	Items         []ValidatingWebhookConfiguration `json:"items"`
}

// MutatingWebhook is one mutating webhook: where it is, what it matches,
// and what happens when it cannot be called.
type MutatingWebhook struct {
	// Name is a fully qualified name ("imagepolicy.example.com"), unique
	// in its configuration.
	Name                    string                  `json:"name" protobuf:"1"`
	ClientConfig            WebhookClientConfig     `json:"clientConfig" protobuf:"2"`
	Rules                   []RuleWithOperations    `json:"rules,omitempty" protobuf:"3"`
	FailurePolicy           *FailurePolicyType      `json:"failurePolicy,omitempty" protobuf:"4"`
	MatchPolicy             *MatchPolicyType        `json:"matchPolicy,omitempty" protobuf:"9"`
	NamespaceSelector       *meta.LabelSelector     `json:"namespaceSelector,omitempty" protobuf:"5"`
	ObjectSelector          *meta.LabelSelector     `json:"objectSelector,omitempty" protobuf:"11"`
	SideEffects             *SideEffectClass        `json:"sideEffects" protobuf:"6"`
	TimeoutSeconds          *int32                  `json:"timeoutSeconds,omitempty" protobuf:"7"`
	AdmissionReviewVersions []string                `json:"admissionReviewVersions" protobuf:"8"`
	ReinvocationPolicy      *ReinvocationPolicyType `json:"reinvocationPolicy,omitempty" protobuf:"10"`
	MatchConditions         []MatchCondition        `json:"matchConditions,omitempty" patchStrategy:"merge" patchMergeKey:"name" listType:"map" listMapKeys:"name" protobuf:"12"`
}

// ValidatingWebhook is one validating webhook.
type ValidatingWebhook struct {
	Name                    string               `json:"name" protobuf:"1"`
	ClientConfig            WebhookClientConfig  `json:"clientConfig" protobuf:"2"`
	Rules                   []RuleWithOperations `json:"rules,omitempty" protobuf:"3"`
	FailurePolicy           *FailurePolicyType   `json:"failurePolicy,omitempty" protobuf:"4"`
	MatchPolicy             *MatchPolicyType     `json:"matchPolicy,omitempty" protobuf:"9"`
	NamespaceSelector       *meta.LabelSelector  `json:"namespaceSelector,omitempty" protobuf:"5"`
	ObjectSelector          *meta.LabelSelector  `json:"objectSelector,omitempty" protobuf:"10"`
	SideEffects             *SideEffectClass     `json:"sideEffects" protobuf:"6"`
	TimeoutSeconds          *int32               `json:"timeoutSeconds,omitempty" protobuf:"7"`
	AdmissionReviewVersions []string             `json:"admissionReviewVersions" protobuf:"8"`
	MatchConditions         []MatchCondition     `json:"matchConditions,omitempty" patchStrategy:"merge" patchMergeKey:"name" listType:"map" listMapKeys:"name" protobuf:"11"`
}

// WebhookClientConfig says how to reach a webhook: exactly one of URL and
// Service, and the CA bundle that verifies its serving certificate (the
// server's system roots when empty).
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty" protobuf:"3"`
	Service  *ServiceReference `json:"service,omitempty" protobuf:"1"`
	CABundle []byte            `json:"caBundle,omitempty" protobuf:"2"`
}

// ServiceReference names a Service in front of a webhook.
type ServiceReference struct {
	Namespace string  `json:"namespace" protobuf:"1"`
	Name      string  `json:"name" protobuf:"2"`
	Path      *string `json:"path,omitempty" protobuf:"3"`
	// Port defaults to 443.
	Port *int32 `json:"port,omitempty" protobuf:"4"`
}

// RuleWithOperations is a Rule and the operations it matches.
type RuleWithOperations struct {
	Operations []OperationType `json:"operations,omitempty" protobuf:"1"`
	Rule       `json:",inline" protobuf:"2"`
}

// Rule matches resources by group, version, resource (and subresource,
// "pods/status", "*/scale", "*/*") and scope; "*" matches any.
type Rule struct {
	APIGroups   []string   `json:"apiGroups,omitempty" protobuf:"1"`
	APIVersions []string   `json:"apiVersions,omitempty" protobuf:"2"`
	Resources   []string   `json:"resources,omitempty" protobuf:"3"`
	Scope       *ScopeType `json:"scope,omitempty" protobuf:"4"`
}

// MatchCondition is a CEL expression that must be true for the webhook to
// be called.
type MatchCondition struct {
	Name       string `json:"name" protobuf:"1"`
	Expression string `json:"expression" protobuf:"2"`
}

// ScopeType is a Rule's scope.
type ScopeType string

// The scopes.
const (
	ClusterScope    ScopeType = "Cluster"
	NamespacedScope ScopeType = "Namespaced"
	AllScopes       ScopeType = "*"
)

// OperationType is an operation a rule matches.
type OperationType string

// The operations.
const (
	OperationAll OperationType = "*"
	Create       OperationType = "CREATE"
	Update       OperationType = "UPDATE"
	Delete       OperationType = "DELETE"
	Connect      OperationType = "CONNECT"
)

// FailurePolicyType says what a failed call does: Fail refuses the write,
// Ignore lets it through.
type FailurePolicyType string

// The failure policies.
const (
	Ignore FailurePolicyType = "Ignore"
	Fail   FailurePolicyType = "Fail"
)

// MatchPolicyType says whether a rule matches only the listed versions
// (Exact) or also the same resource served in another version
// (Equivalent), which the webhook then sees converted to the version it
// listed.
type MatchPolicyType string

// The match policies.
const (
	Exact      MatchPolicyType = "Exact"
	Equivalent MatchPolicyType = "Equivalent"
)

// SideEffectClass says whether calling a webhook changes anything
// elsewhere; a dry-run request is only sent to webhooks without side
// effects (None, NoneOnDryRun).
type SideEffectClass string

// The side effect classes; Unknown and Some are only kept on objects
// created by older versions.
const (
	SideEffectClassUnknown      SideEffectClass = "Unknown"
	SideEffectClassNone         SideEffectClass = "None"
	SideEffectClassSome         SideEffectClass = "Some"
	SideEffectClassNoneOnDryRun SideEffectClass = "NoneOnDryRun"
)

// ReinvocationPolicyType says whether a mutating webhook is called again
// when a later plugin changed the object.
type ReinvocationPolicyType string

// The reinvocation policies.
const (
	NeverReinvocationPolicy    ReinvocationPolicyType = "Never"
	IfNeededReinvocationPolicy ReinvocationPolicyType = "IfNeeded"
)
