// Package filters holds the HTTP filters of the request path, each a
// func(http.Handler, ...) http.Handler in its own file: panic recovery,
// request info, timeout, authentication, audit, impersonation,
// authorization. server/chain.go composes them in the documented order.
package filters
