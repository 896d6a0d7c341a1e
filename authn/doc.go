// Package authn turns a request's credentials into a User: client
// certificates (X509, with CA bundles reloaded from disk by CAFile), the
// front proxy's request headers (RequestHeader), bearer tokens
// (NewBearerToken in front of any TokenAuthenticator: the static tokens of
// a token file, and, in the subpackages, service-account and user JWTs,
// OIDC issuers and a TokenReview webhook), and anonymous access
// (WithAnonymous). Union puts authenticators together in kube-apiserver's
// order; NewTokenCache remembers token verdicts under an HMAC of the token.
//
// The server's authentication filter calls one Authenticator per request;
// a request that none accepts, or whose credential is invalid, is answered
// 401 and never reaches a handler. Authenticators never put a credential
// in an error or a log line, and remove the headers that carried it.
package authn
