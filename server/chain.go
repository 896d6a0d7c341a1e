package server

import (
	"net/http"

	"github.com/apikit-dev/apikit/server/filters"
)

// DefaultBuildHandlerChain wraps the API handler in the standard filters.
// The list reads in request order, outermost first: this function is the
// whole request path of an apikit server.
func DefaultBuildHandlerChain(apiHandler http.Handler, c *CompletedConfig) http.Handler {
	chain := []func(http.Handler) http.Handler{
		// A panic anywhere below becomes a 500 Status, not a dead server.
		filters.WithPanicRecovery,
		// Parse verb, group, resource, namespace, name once for all below.
		func(h http.Handler) http.Handler { return filters.WithRequestInfo(h, c.RequestInfoResolver) },
		// One structured line per request at -v=3 (kube's "HTTP" line).
		func(h http.Handler) http.Handler { return filters.WithHTTPLogging(h, c.Logger) },
		// Count and time every request under kube-apiserver's metric names
		// (served at /metrics), those refused below included.
		func(h http.Handler) http.Handler { return filters.WithMetrics(h, c.Metrics, c.LongRunning) },
		// Bound non-watch requests in time (504 when exceeded).
		func(h http.Handler) http.Handler { return filters.WithTimeout(h, c.RequestTimeout, c.LongRunning) },
		// Requests refused below for want of a user are audited here.
		func(h http.Handler) http.Handler {
			return filters.WithFailedAuthenticationAudit(h, c.Audit, c.AuditPolicy)
		},
		// Who is asking (401 when nobody we know).
		func(h http.Handler) http.Handler {
			return filters.WithAuthentication(h, c.Authenticator, c.PublicPaths)
		},
		// The request's span, child of a privileged client's trace context
		// (when a TracerProvider is set).
		func(h http.Handler) http.Handler { return filters.WithTracing(h, c.TracerProvider) },
		// Record who asked what, and the answer (when an audit sink is set).
		func(h http.Handler) http.Handler { return filters.WithAudit(h, c.Audit, c.AuditPolicy, c.LongRunning) },
		// Act as another user if the authorizer allows it (Impersonate-*).
		func(h http.Handler) http.Handler { return filters.WithImpersonation(h, c.Authorizer) },
		// Whether it may run now (429 + Retry-After when overloaded).
		func(h http.Handler) http.Handler {
			if c.FlowControl == nil {
				return h
			}
			return filters.WithFlowControl(h, c.FlowControl, c.LongRunning)
		},
		// Whether it may do this at all (403 with the reason).
		func(h http.Handler) http.Handler { return filters.WithAuthorization(h, c.Authorizer) },
	}
	h := apiHandler
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i] != nil {
			h = chain[i](h)
		}
	}
	return h
}
