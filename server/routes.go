package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/respond"
)

// apiRoutes dispatches requests under the installed group-versions. The
// route table is go-restful's: it documents the API and OpenAPI is built
// from it. Dispatch goes through an http.ServeMux built from that table,
// which matches a request with a few lookups where go-restful's router sorts
// and matches every route of the WebService with regular expressions (about
// a tenth of a cached GET's CPU).
type apiRoutes struct {
	mux *http.ServeMux

	mu    sync.RWMutex // guards roots
	roots []string
}

func newAPIRoutes() *apiRoutes {
	a := &apiRoutes{mux: http.NewServeMux()}
	// Everything no route claims lands here (ServeMux prefers any more
	// specific pattern, a method-less "/" least of all).
	a.mux.HandleFunc("/", a.unrouted)
	return a
}

// add registers every route of ws.
func (a *apiRoutes) add(ws *restful.WebService) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, rt := range ws.Routes() {
		path := rt.Path
		if err := a.handle(rt, path); err != nil {
			return err
		}
		// A WebService's "/" route is its root, with or without the slash.
		if strings.HasSuffix(path, "/") {
			if err := a.handle(rt, strings.TrimSuffix(path, "/")); err != nil {
				return err
			}
		}
	}
	a.roots = append(a.roots, ws.RootPath())
	return nil
}

// handle registers one route under path: its handler
// (endpoints.MetadataHandler, set with endpoints.To) when it has one, else
// its go-restful function behind an adapter, which costs a restful.Request
// and Response per call.
func (a *apiRoutes) handle(rt restful.Route, path string) (err error) {
	pattern := path
	if strings.HasSuffix(pattern, "/") {
		pattern += "{$}" // exactly this path, not the subtree
	}
	defer func() {
		// ServeMux panics on conflicting patterns: report, don't crash.
		if p := recover(); p != nil {
			err = fmt.Errorf("server: route %s %s: %v", rt.Method, path, p)
		}
	}()
	if h, ok := rt.Metadata[endpoints.MetadataHandler].(http.Handler); ok {
		a.mux.HandleFunc(rt.Method+" "+pattern, func(w http.ResponseWriter, r *http.Request) {
			metrics.MarkRouted(r.Context(), "")
			h.ServeHTTP(w, r)
		})
		return nil
	}
	params := pathParams(path)
	fn := rt.Function
	a.mux.HandleFunc(rt.Method+" "+pattern, func(w http.ResponseWriter, r *http.Request) {
		metrics.MarkRouted(r.Context(), "")
		req := restful.NewRequest(r)
		for _, p := range params {
			req.PathParameters()[p] = r.PathValue(p)
		}
		fn(req, restful.NewResponse(w))
	})
	return nil
}

// pathParams lists the {name} wildcards of a path.
func pathParams(path string) []string {
	var names []string
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(path[i:], '}')
		if j < 0 {
			return names
		}
		names = append(names, path[i+1:i+j])
		path = path[i+j+1:]
	}
}

// owns reports whether path is under an installed group-version.
func (a *apiRoutes) owns(path string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, root := range a.roots {
		if path == root || strings.HasPrefix(path, root+"/") {
			return true
		}
	}
	return false
}

var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// serve dispatches r. ServeMux is safe for use while routes are added.
func (a *apiRoutes) serve(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// unrouted answers 405 for a path served under other methods and 404 for a
// path served under none, as Status objects.
func (a *apiRoutes) unrouted(w http.ResponseWriter, r *http.Request) {
	probe := r.Clone(r.Context())
	for _, m := range routeMethods {
		probe.Method = m
		if _, pattern := a.mux.Handler(probe); pattern != "/" && pattern != "" {
			st := meta.NewMethodNotSupported(meta.GroupResource{}, r.Method)
			st.ErrStatus.Message = fmt.Sprintf("the server does not allow this method on the requested resource (%s %s)", r.Method, r.URL.Path)
			respond.Error(w, r, st)
			return
		}
	}
	respond.Error(w, r, meta.NewNotFoundPath())
}
