// Package oidc authenticates the bearer tokens of OpenID Connect and other
// JWT issuers, as kube-apiserver's --oidc-* flags and the jwt section of
// its --authentication-config file do: the token is a JWT from a configured
// issuer URL, signed by a key the issuer publishes (its discovery document
// names the JWKS), meant for a configured audience (the client ID), and the
// user is read from its claims (a username claim and a groups claim, each
// with an optional prefix).
//
// Keys are fetched over TLS (a given CA bundle, or the system's roots)
// when the first token arrives, kept, refetched when they grow old, and
// refetched at once (but at most once per MinRefetchInterval) when a
// token names a key the cache does not have: that is how a key rotation
// reaches the server without a restart, and how a flood of forged key IDs
// is kept from becoming a flood of requests to the issuer.
//
// The authenticator sits behind the bearer-token authenticator and the
// token cache (package authn) in the authentication filter.
package oidc
