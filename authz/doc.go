// Package authz decides whether a user may do what a request asks: a verb on
// a resource (or a non-resource path). The server's authorization filter
// calls one Authorizer per request and answers 403 with the reason when the
// decision is not Allow.
//
// An Authorizer answers one question; a RuleResolver lists everything a user
// may do in a namespace (SelfSubjectRulesReview, `kubectl auth can-i
// --list`). Union chains authorizers as --authorization-mode does: the
// first that allows or denies decides. PrivilegedGroups (system:masters) and
// AlwaysAllowPaths (health endpoints) head that chain. The authorizers that
// hold state live in subpackages: rbac (roles and bindings served by the
// server itself) and webhook (SubjectAccessReview to another server);
// review serves the authorization.k8s.io reviews that kubectl auth can-i
// posts.
package authz
