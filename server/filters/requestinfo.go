package filters

import (
	"net/http"

	"github.com/apikit-dev/apikit/request"
)

// WithRequestInfo parses what the request asks (verb, group, resource,
// namespace, name...) once and puts it in the context for later filters.
func WithRequestInfo(h http.Handler, resolver *request.Resolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := resolver.Resolve(r)
		h.ServeHTTP(w, r.WithContext(request.WithInfo(r.Context(), info)))
	})
}
