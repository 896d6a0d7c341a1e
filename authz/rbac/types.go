package rbac

import "github.com/apikit-dev/apikit/meta"

// GroupName is the API group of the RBAC resources.
const GroupName = "rbac.authorization.k8s.io"

// Version is the served (and storage) version.
const Version = "v1"

// Kinds of the RBAC objects and of binding subjects.
const (
	KindRole               = "Role"
	KindClusterRole        = "ClusterRole"
	KindRoleBinding        = "RoleBinding"
	KindClusterRoleBinding = "ClusterRoleBinding"

	UserKind           = "User"
	GroupKind          = "Group"
	ServiceAccountKind = "ServiceAccount"
)

// Wildcards of PolicyRule fields.
const (
	VerbAll               = "*"
	APIGroupAll           = "*"
	ResourceAll           = "*"
	NonResourceAll        = "*"
	AutoUpdateAnnotation  = "rbac.authorization.kubernetes.io/autoupdate"
	BootstrappingLabelKey = "kubernetes.io/bootstrapping"
	BootstrappingLabel    = "rbac-defaults"
)

// PolicyRule says which verbs a rule allows on which resources (or
// non-resource URLs). Every list but ResourceNames must match; "*" matches
// anything.
type PolicyRule struct {
	Verbs []string `json:"verbs" protobuf:"1"`
	// APIGroups name the groups of Resources; "" is the core group.
	APIGroups []string `json:"apiGroups,omitempty" protobuf:"2"`
	// Resources are plural resource names, "resource/subresource" for a
	// subresource, "*/subresource" for one subresource of every resource.
	Resources []string `json:"resources,omitempty" protobuf:"3"`
	// ResourceNames, when set, limit the rule to these object names.
	ResourceNames []string `json:"resourceNames,omitempty" protobuf:"4"`
	// NonResourceURLs are paths ("/healthz", "/apis/*") for ClusterRoles
	// bound by ClusterRoleBindings; a trailing "*" is a prefix match.
	NonResourceURLs []string `json:"nonResourceURLs,omitempty" protobuf:"5"`
}

// Subject is whom a binding grants its role: a user, a group or a service
// account.
type Subject struct {
	// Kind is "User", "Group" or "ServiceAccount".
	Kind string `json:"kind" protobuf:"1"`
	// APIGroup is "rbac.authorization.k8s.io" for users and groups, "" for
	// service accounts.
	APIGroup string `json:"apiGroup,omitempty" protobuf:"2"`
	Name     string `json:"name" protobuf:"3"`
	// Namespace is a service account's namespace; in a RoleBinding it
	// defaults to the binding's.
	Namespace string `json:"namespace,omitempty" protobuf:"4"`
}

// RoleRef names the role a binding grants. It cannot change once set.
type RoleRef struct {
	APIGroup string `json:"apiGroup" protobuf:"1"`
	Kind     string `json:"kind" protobuf:"2"`
	Name     string `json:"name" protobuf:"3"`
}

// AggregationRule makes a ClusterRole's rules the union of the rules of
// every ClusterRole any of its selectors matches; the aggregation
// controller keeps them so.
type AggregationRule struct {
	ClusterRoleSelectors []meta.LabelSelector `json:"clusterRoleSelectors,omitempty" protobuf:"1"`
}

// Role is a set of rules in one namespace.
type Role struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Rules           []PolicyRule `json:"rules" protobuf:"2"`
}

// ClusterRole is a set of rules usable cluster-wide (by a
// ClusterRoleBinding) or in any namespace (by a RoleBinding).
type ClusterRole struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Rules           []PolicyRule `json:"rules" protobuf:"2"`
	// AggregationRule, when set, makes Rules the controller's to fill.
	AggregationRule *AggregationRule `json:"aggregationRule,omitempty" protobuf:"3"`
}

// RoleBinding grants a Role of its namespace, or a ClusterRole's rules in
// its namespace, to subjects.
type RoleBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Subjects        []Subject `json:"subjects,omitempty" protobuf:"2"`
	RoleRef         RoleRef   `json:"roleRef" protobuf:"3"`
}

// ClusterRoleBinding grants a ClusterRole cluster-wide to subjects.
type ClusterRoleBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Subjects        []Subject `json:"subjects,omitempty" protobuf:"2"`
	RoleRef         RoleRef   `json:"roleRef" protobuf:"3"`
}
