package filters

import (
	"net/http"

	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/respond"
)

// WithRequestInfo parses what the request asks (verb, group, resource,
// namespace, name...) once and puts it in the context for later filters and
// the handlers. A resource path no handler can serve (request.Info.Err: a
// namespace or name "..", or one holding an escaped "/") is refused here,
// before authentication, so that no filter judges a path the router would
// read differently.
func WithRequestInfo(h http.Handler, resolver *request.Resolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := resolver.Resolve(r)
		if err := info.Err(); err != nil {
			respond.Error(w, r, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(request.WithInfo(r.Context(), info)))
	})
}
