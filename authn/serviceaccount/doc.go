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
// tokens kube-apiserver and client-go accept. Verifying tokens, the
// authenticator side, lives here too once it is written.
//
// The options package loads the keys from flags and builds the Generator
// for the first issuer; a TokenRequest endpoint uses it.
package serviceaccount
