// Package review serves authorization.k8s.io/v1: SubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectAccessReview and
// SelfSubjectRulesReview, the computed, never-stored resources that
// `kubectl auth can-i` and other servers' webhook authorizers post. Its
// types are also the wire format of the webhook authorizer.
package review
