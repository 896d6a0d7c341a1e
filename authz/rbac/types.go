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
	Verbs []string `json:"verbs"`
	// APIGroups name the groups of Resources; "" is the core group.
	APIGroups []string `json:"apiGroups,omitempty"`
	// Resources are plural resource names, "resource/subresource" for a
	// subresource, "*/subresource" for one subresource of every resource.
	Resources []string `json:"resources,omitempty"`
	// ResourceNames, when set, limit the rule to these object names.
	ResourceNames []string `json:"resourceNames,omitempty"`
	// NonResourceURLs are paths ("/healthz", "/apis/*") for ClusterRoles
	// bound by ClusterRoleBindings; a trailing "*" is a prefix match.
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// Subject is whom a binding grants its role: a user, a group or a service
// account.
type Subject struct {
	// Kind is "User", "Group" or "ServiceAccount".
	Kind string `json:"kind"`
	// APIGroup is "rbac.authorization.k8s.io" for users and groups, "" for
	// service accounts.
	APIGroup string `json:"apiGroup,omitempty"`
	Name     string `json:"name"`
	// Namespace is a service account's namespace; in a RoleBinding it
	// defaults to the binding's.
	Namespace string `json:"namespace,omitempty"`
}

// RoleRef names the role a binding grants. It cannot change once set.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// AggregationRule makes a ClusterRole's rules the union of the rules of
// every ClusterRole any of its selectors matches; the aggregation
// controller keeps them so.
type AggregationRule struct {
	ClusterRoleSelectors []meta.LabelSelector `json:"clusterRoleSelectors,omitempty"`
}

// Role is a set of rules in one namespace.
type Role struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Rules           []PolicyRule `json:"rules"`
}

// ClusterRole is a set of rules usable cluster-wide (by a
// ClusterRoleBinding) or in any namespace (by a RoleBinding).
type ClusterRole struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Rules           []PolicyRule `json:"rules"`
	// AggregationRule, when set, makes Rules the controller's to fill.
	AggregationRule *AggregationRule `json:"aggregationRule,omitempty"`
}

// RoleBinding grants a Role of its namespace, or a ClusterRole's rules in
// its namespace, to subjects.
type RoleBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Subjects        []Subject `json:"subjects,omitempty"`
	RoleRef         RoleRef   `json:"roleRef"`
}

// ClusterRoleBinding grants a ClusterRole cluster-wide to subjects.
type ClusterRoleBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Subjects        []Subject `json:"subjects,omitempty"`
	RoleRef         RoleRef   `json:"roleRef"`
}
