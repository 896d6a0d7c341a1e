// Package rbac is role-based access control served by the server itself:
// the rbac.authorization.k8s.io/v1 types (Role, ClusterRole, RoleBinding,
// ClusterRoleBinding), their stores (escalation refused on writes), an
// in-memory Index that Sync keeps equal to storage through watches, the
// Authorizer that decides from that index with map lookups, the
// ClusterRole aggregation controller (Aggregate), and kube-apiserver's
// default roles (DefaultPolicy), which Reconcile keeps in place without
// undoing users' changes.
//
// It sits in the authorization step of the request path, as one mode of
// --authorization-mode; the options package wires it in.
package rbac
