// Package authn turns a request's credentials into a User: client
// certificates, bearer tokens, front-proxy headers and more. The server's
// authentication filter calls one Authenticator per request; a request that
// none accepts is answered 401 and never reaches a handler.
package authn
