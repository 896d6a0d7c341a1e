// Package authz decides whether a user may do what a request asks: a verb on
// a resource (or a non-resource path). The server's authorization filter
// calls one Authorizer per request and answers 403 with the reason when the
// decision is not Allow.
package authz
