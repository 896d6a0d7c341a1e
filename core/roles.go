package core

import "github.com/apikit-dev/apikit/authz/rbac"

// ClusterRoles extend the default roles view, edit and admin to the core
// group, through the aggregation labels, as kube-apiserver's bootstrap
// policy does: view reads namespaces, configmaps, serviceaccounts and
// events but not secrets; edit writes configmaps, secrets and
// serviceaccounts and mints their tokens. A server installing the core
// group adds them to its RBAC policy (options.AuthorizationOptions'
// RBACPolicy.ClusterRoles).
func ClusterRoles() []rbac.ClusterRole {
	read := []string{"get", "list", "watch"}
	write := []string{"create", "delete", "deletecollection", "patch", "update"}
	return []rbac.ClusterRole{
		rbac.BootstrapClusterRole("system:core:aggregate-to-view", map[string]string{rbac.AggregateToView: "true"},
			rbac.Rule("", []string{"configmaps", "events", "namespaces", "namespaces/status", "serviceaccounts"}, read...),
			rbac.Rule("events.k8s.io", []string{"events"}, read...)),
		rbac.BootstrapClusterRole("system:core:aggregate-to-edit", map[string]string{rbac.AggregateToEdit: "true"},
			rbac.Rule("", []string{"configmaps", "secrets", "serviceaccounts"}, write...),
			rbac.Rule("", []string{"secrets"}, read...),
			rbac.Rule("", []string{"serviceaccounts/token"}, "create")),
	}
}
