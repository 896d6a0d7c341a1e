// Package review serves the authentication.k8s.io/v1 API of an apikit
// server: SelfSubjectReview, which tells callers who the server thinks
// they are (kubectl auth whoami), and TokenReview, which lets another
// server (or anyone allowed to create tokenreviews) ask whether a bearer
// token is valid and whose it is. Both are computed, never stored
// (registry.NewCreateOnly). The options package installs them into the
// outermost server; the webhook token authenticator speaks TokenReview as
// a client.
package review
