// Package serviceaccount holds Kubernetes service-account tokens: the keys
// they are signed and verified with, and a Generator that signs them.
//
// A service-account token is a JWT whose subject is
// system:serviceaccount:<namespace>:<name>, whose issuer is the server's
// --service-account-issuer, and whose private "kubernetes.io" claim names
// the service account (and, for bound tokens, the object it is bound to).
// kube-apiserver signs them with --service-account-signing-key-file and
// verifies them with the public keys of --service-account-key-file; this
// package reads both kinds of file (RSA and ECDSA keys, in PEM) and makes
// tokens kube-apiserver and client-go accept. Authenticator verifies them
// (signature, issuer, audiences, expiry with ClockSkew) for the server's
// bearer-token authentication.
//
// Besides service accounts, the same key signs user tokens
// (NewUserClaims, Generator.GenerateUserToken): a subject that is a user
// name and the private claim "apikit.dev/user" with the user's UID and
// groups. `<server> token --user alice --group dev` mints them, so that a
// server's operator can hand out credentials without a CA.
//
// The options package loads the keys from flags (or makes the development
// PKI's key, <cert-dir>/sa.key), builds the Generator for the first issuer
// and puts an Authenticator in the server's authenticator.
package serviceaccount
