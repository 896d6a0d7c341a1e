package flowcontrol

import "github.com/apikit-dev/apikit/meta"

// GroupName is the API group of the flow-control configuration.
const GroupName = "flowcontrol.apiserver.k8s.io"

// Version is the served (and stored) version of the group.
const Version = "v1"

// Well-known names and wildcards of the configuration, as Kubernetes has
// them.
const (
	PriorityLevelExempt   = "exempt"
	PriorityLevelCatchAll = "catch-all"
	FlowSchemaExempt      = "exempt"
	FlowSchemaCatchAll    = "catch-all"

	// VerbAll, APIGroupAll, ResourceAll, NonResourceAll and NameAll match
	// anything in their field; NamespaceEvery matches every namespace.
	VerbAll        = "*"
	APIGroupAll    = "*"
	ResourceAll    = "*"
	NonResourceAll = "*"
	NameAll        = "*"
	NamespaceEvery = "*"

	// AutoUpdateAnnotation marks configuration objects the server keeps
	// equal to its built-in defaults ("true") or leaves alone ("false").
	AutoUpdateAnnotation = "apf.kubernetes.io/autoupdate-spec"

	// ResponseHeaderFlowSchemaUID and ResponseHeaderPriorityLevelUID name
	// the flow schema and priority level a request was classified into.
	ResponseHeaderFlowSchemaUID    = "X-Kubernetes-PF-FlowSchema-UID"
	ResponseHeaderPriorityLevelUID = "X-Kubernetes-PF-PriorityLevel-UID"
)

// FlowSchema says which requests belong to which priority level, and how
// they are divided into flows (flowcontrol.apiserver.k8s.io/v1).
type FlowSchema struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            FlowSchemaSpec   `json:"spec,omitempty" description:"The matching rules, the priority level and the flow distinguisher." protobuf:"2"`
	Status          FlowSchemaStatus `json:"status,omitempty" description:"Conditions the server observed." protobuf:"3"`
}

// FlowSchemaSpec is what a FlowSchema matches and where it sends it.
type FlowSchemaSpec struct {
	// PriorityLevelConfiguration names the level matching requests go to.
	PriorityLevelConfiguration PriorityLevelConfigurationReference `json:"priorityLevelConfiguration" protobuf:"1"`
	// MatchingPrecedence orders schemas: the lowest number that matches
	// wins (1 to 10000; default 1000).
	MatchingPrecedence int32 `json:"matchingPrecedence,omitempty" protobuf:"2"`
	// DistinguisherMethod divides matching requests into flows; nil puts
	// them all in one flow.
	DistinguisherMethod *FlowDistinguisherMethod `json:"distinguisherMethod,omitempty" protobuf:"3"`
	// Rules match when any of them does; none matches nothing.
	Rules []PolicyRulesWithSubjects `json:"rules,omitempty" protobuf:"4"`
}

// PriorityLevelConfigurationReference names a priority level.
type PriorityLevelConfigurationReference struct {
	Name string `json:"name" protobuf:"1"`
}

// FlowDistinguisherMethodType is how requests are divided into flows.
type FlowDistinguisherMethodType string

// The distinguisher methods.
const (
	FlowDistinguisherMethodByUser      FlowDistinguisherMethodType = "ByUser"
	FlowDistinguisherMethodByNamespace FlowDistinguisherMethodType = "ByNamespace"
)

// FlowDistinguisherMethod holds a distinguisher method.
type FlowDistinguisherMethod struct {
	Type FlowDistinguisherMethodType `json:"type" protobuf:"1"`
}

// PolicyRulesWithSubjects matches a request when one of its subjects is the
// requester and one of its rules the request.
type PolicyRulesWithSubjects struct {
	Subjects         []Subject               `json:"subjects" protobuf:"1"`
	ResourceRules    []ResourcePolicyRule    `json:"resourceRules,omitempty" protobuf:"2"`
	NonResourceRules []NonResourcePolicyRule `json:"nonResourceRules,omitempty" protobuf:"3"`
}

// SubjectKind is the kind of a Subject.
type SubjectKind string

// The subject kinds.
const (
	SubjectKindUser           SubjectKind = "User"
	SubjectKindGroup          SubjectKind = "Group"
	SubjectKindServiceAccount SubjectKind = "ServiceAccount"
)

// Subject is a user, a group or a service account.
type Subject struct {
	Kind           SubjectKind            `json:"kind" protobuf:"1"`
	User           *UserSubject           `json:"user,omitempty" protobuf:"2"`
	Group          *GroupSubject          `json:"group,omitempty" protobuf:"3"`
	ServiceAccount *ServiceAccountSubject `json:"serviceAccount,omitempty" protobuf:"4"`
}

// UserSubject is a user by name ("*" for all).
type UserSubject struct {
	Name string `json:"name" protobuf:"1"`
}

// GroupSubject is a group by name ("*" for all).
type GroupSubject struct {
	Name string `json:"name" protobuf:"1"`
}

// ServiceAccountSubject is a service account by namespace and name ("*"
// for every name).
type ServiceAccountSubject struct {
	Namespace string `json:"namespace" protobuf:"1"`
	Name      string `json:"name" protobuf:"2"`
}

// ResourcePolicyRule matches resource requests.
type ResourcePolicyRule struct {
	Verbs     []string `json:"verbs" protobuf:"1"`
	APIGroups []string `json:"apiGroups" protobuf:"2"`
	// Resources are plural resources, "resource/subresource", or "*".
	Resources []string `json:"resources" protobuf:"3"`
	// ClusterScope matches requests without a namespace.
	ClusterScope bool `json:"clusterScope,omitempty" protobuf:"4"`
	// Namespaces match requests in them ("*" for any namespace).
	Namespaces []string `json:"namespaces,omitempty" protobuf:"5"`
}

// NonResourcePolicyRule matches requests for other paths.
type NonResourcePolicyRule struct {
	Verbs []string `json:"verbs" protobuf:"1"`
	// NonResourceURLs are paths, "/prefix/*" prefixes, or "*".
	NonResourceURLs []string `json:"nonResourceURLs" protobuf:"6"`
}

// FlowSchemaStatus is what the server observed of a FlowSchema.
type FlowSchemaStatus struct {
	Conditions []FlowSchemaCondition `json:"conditions,omitempty" protobuf:"1"`
}

// FlowSchemaConditionType names a FlowSchema condition.
type FlowSchemaConditionType string

// FlowSchemaConditionDangling is True when the schema's priority level
// does not exist: the schema is then ignored.
const FlowSchemaConditionDangling FlowSchemaConditionType = "Dangling"

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// FlowSchemaCondition is one condition of a FlowSchema.
type FlowSchemaCondition struct {
	Type               FlowSchemaConditionType `json:"type,omitempty" protobuf:"1"`
	Status             ConditionStatus         `json:"status,omitempty" protobuf:"2"`
	LastTransitionTime meta.Time               `json:"lastTransitionTime,omitempty" protobuf:"3"`
	Reason             string                  `json:"reason,omitempty" protobuf:"4"`
	Message            string                  `json:"message,omitempty" protobuf:"5"`
}

// PriorityLevelConfiguration is a share of the server's concurrency and
// how requests wait for it (flowcontrol.apiserver.k8s.io/v1).
type PriorityLevelConfiguration struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            PriorityLevelConfigurationSpec   `json:"spec,omitempty" description:"Whether the level is limited and how." protobuf:"2"`
	Status          PriorityLevelConfigurationStatus `json:"status,omitempty" description:"Conditions the server observed." protobuf:"3"`
}

// PriorityLevelEnablement is Exempt or Limited.
type PriorityLevelEnablement string

// The priority level types.
const (
	PriorityLevelEnablementExempt  PriorityLevelEnablement = "Exempt"
	PriorityLevelEnablementLimited PriorityLevelEnablement = "Limited"
)

// PriorityLevelConfigurationSpec configures a priority level.
type PriorityLevelConfigurationSpec struct {
	Type    PriorityLevelEnablement            `json:"type" protobuf:"1"`
	Limited *LimitedPriorityLevelConfiguration `json:"limited,omitempty" protobuf:"2"`
	Exempt  *ExemptPriorityLevelConfiguration  `json:"exempt,omitempty" protobuf:"3"`
}

// LimitedPriorityLevelConfiguration is a limited level's share and queues.
type LimitedPriorityLevelConfiguration struct {
	// NominalConcurrencyShares is the level's share of the server's
	// concurrency (default 30).
	NominalConcurrencyShares *int32 `json:"nominalConcurrencyShares,omitempty" protobuf:"1"`
	// LimitResponse says what happens to requests beyond the limit.
	LimitResponse LimitResponse `json:"limitResponse,omitempty" protobuf:"2"`
	// LendablePercent of the nominal limit others may borrow (default 0).
	LendablePercent *int32 `json:"lendablePercent,omitempty" protobuf:"3"`
	// BorrowingLimitPercent bounds what the level may borrow, as a
	// percentage of its nominal limit; nil is no bound.
	BorrowingLimitPercent *int32 `json:"borrowingLimitPercent,omitempty" protobuf:"4"`
}

// ExemptPriorityLevelConfiguration is an exempt level's shares, which only
// matter for lending.
type ExemptPriorityLevelConfiguration struct {
	NominalConcurrencyShares *int32 `json:"nominalConcurrencyShares,omitempty" protobuf:"1"`
	LendablePercent          *int32 `json:"lendablePercent,omitempty" protobuf:"2"`
}

// LimitResponseType is Queue or Reject.
type LimitResponseType string

// The limit response types.
const (
	LimitResponseTypeQueue  LimitResponseType = "Queue"
	LimitResponseTypeReject LimitResponseType = "Reject"
)

// LimitResponse is what a limited level does with excess requests.
type LimitResponse struct {
	Type    LimitResponseType     `json:"type" protobuf:"1"`
	Queuing *QueuingConfiguration `json:"queuing,omitempty" protobuf:"2"`
}

// QueuingConfiguration shapes the fair queuing of a level.
type QueuingConfiguration struct {
	// Queues is the number of queues (default 64).
	Queues int32 `json:"queues,omitempty" protobuf:"1"`
	// HandSize is how many queues shuffle sharding deals a flow (default 8).
	HandSize int32 `json:"handSize,omitempty" protobuf:"2"`
	// QueueLengthLimit bounds each queue (default 50).
	QueueLengthLimit int32 `json:"queueLengthLimit,omitempty" protobuf:"3"`
}

// PriorityLevelConfigurationStatus is what the server observed of a level.
type PriorityLevelConfigurationStatus struct {
	Conditions []PriorityLevelConfigurationCondition `json:"conditions,omitempty" protobuf:"1"`
}

// PriorityLevelConfigurationConditionType names a level's condition.
type PriorityLevelConfigurationConditionType string

// PriorityLevelConfigurationConditionConcurrencyShared is True for a
// limited level, whose concurrency may be lent and borrowed.
const PriorityLevelConfigurationConditionConcurrencyShared PriorityLevelConfigurationConditionType = "ConcurrencyShared"

// PriorityLevelConfigurationCondition is one condition of a level.
type PriorityLevelConfigurationCondition struct {
	Type               PriorityLevelConfigurationConditionType `json:"type,omitempty" protobuf:"1"`
	Status             ConditionStatus                         `json:"status,omitempty" protobuf:"2"`
	LastTransitionTime meta.Time                               `json:"lastTransitionTime,omitempty" protobuf:"3"`
	Reason             string                                  `json:"reason,omitempty" protobuf:"4"`
	Message            string                                  `json:"message,omitempty" protobuf:"5"`
}
