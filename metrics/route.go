package metrics

import (
	"context"
	"sync/atomic"
)

// Route records whether a request reached a route of the server. Labels
// taken from the request's path (group, version, resource, subresource)
// are only as bounded as the routes are: a path no route serves must not
// become a series, so the filter uses them only once MarkRouted was called.
//
// The router may run on another goroutine than the filter (the timeout
// filter abandons handlers that overrun), hence the atomics.
type Route struct {
	// Registry is the server's registry, for the code a request reaches
	// behind the filter (authentication, flow control, admission, watch)
	// to count under: see From. The filter sets it before the request
	// goes on.
	Registry *Registry

	routed atomic.Bool
	// path is the route's pattern for a non-resource request.
	path atomic.Pointer[string]
}

type routeKey struct{}

// WithRoute returns ctx carrying r, for MarkRouted to find.
func WithRoute(ctx context.Context, r *Route) context.Context {
	return context.WithValue(ctx, routeKey{}, r)
}

// From returns the registry of the server whose handler chain the request
// of ctx is in, nil outside one (or when the server has no metrics). Every
// method of Registry does nothing on nil, so code that may run without
// metrics need not check.
func From(ctx context.Context) *Registry {
	r, _ := ctx.Value(routeKey{}).(*Route)
	if r == nil {
		return nil
	}
	return r.Registry
}

// MarkRouted records that the request of ctx reached a route; path is the
// route's pattern for a non-resource path (/healthz, /version...), "" for
// an API resource route. Without a Route in ctx it does nothing.
func MarkRouted(ctx context.Context, path string) {
	r, _ := ctx.Value(routeKey{}).(*Route)
	if r == nil {
		return
	}
	if path != "" {
		r.path.Store(&path)
	}
	r.routed.Store(true)
}

// Routed reports whether the request reached a route, and the route's
// pattern when it was a non-resource one.
func (r *Route) Routed() (ok bool, path string) {
	if !r.routed.Load() {
		return false, ""
	}
	if p := r.path.Load(); p != nil {
		path = *p
	}
	return true, path
}
