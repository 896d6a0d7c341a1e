package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/openapi"
	"github.com/apikit-dev/apikit/server/respond"
)

// OpenAPIDocuments builds the OpenAPI documents of the routes and resources
// of the whole chain, as PrepareRun serves them. Every call builds them
// anew: call it once every group is installed.
func (s *GenericServer) OpenAPIDocuments() (*openapi.Documents, error) {
	var resources []registry.Resource
	for _, g := range s.APIGroups() {
		if g.dynamic {
			continue
		}
		for _, v := range g.Versions {
			resources = append(resources, v.Resources...)
		}
	}
	docs, err := openapi.Build(openapi.Config{
		Title:       s.config.OpenAPITitle,
		Version:     s.config.OpenAPIVersion,
		WebServices: s.WebServices(),
		Resources:   resources,
		Schemas:     s.schemas,
	})
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI documents: %w", err)
	}
	return docs, nil
}

// installOpenAPI serves /openapi/v2 and /openapi/v3 for the whole chain.
// The documents are built on the first request for one, not at start: few
// clients ask (kubectl does for explain, apply and field validation), and
// building them costs a server as much time as the rest of its start. Every
// group is installed by then, and none changes while the server runs; the
// documents of the dynamic sources of the chain (SetDynamicOpenAPI) are
// merged in on the first request after one changed. When
// /openapi/v2 is already handled (a second call, or an aggregator that
// serves documents merged with its backends' through Handle), the handlers
// in place are kept.
func (s *GenericServer) installOpenAPI() {
	probe := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/openapi/v2"}}
	if _, pattern := s.mux.Handler(probe); pattern == "/openapi/v2" {
		return
	}
	var (
		once   sync.Once
		static *openapi.Documents
		fail   http.Handler
		mu     sync.Mutex
		merged *openapi.Documents
		gens   []uint64 // the dynamic sources' generations merged
	)
	// handlers returns the documents' handlers: the chain's, built once,
	// merged with the dynamic sources' (SetDynamicOpenAPI) whenever one of
	// those changed.
	handlers := func() (http.Handler, http.Handler) {
		once.Do(func() {
			docs, err := s.OpenAPIDocuments()
			if err != nil {
				// The route table cannot be documented: a programming
				// error, but not one to take the API down for. Say so
				// where clients look.
				s.config.Logger.Error("OpenAPI unavailable", "server", s.name, "err", err)
				fail = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					respond.Error(w, r, meta.NewInternalError(err))
				})
				return
			}
			static = docs
		})
		if fail != nil {
			return fail, fail
		}
		sources := s.dynamicOpenAPISources()
		if len(sources) == 0 {
			return static.V2Handler(), static.V3Handler()
		}
		now := make([]uint64, len(sources))
		for i, src := range sources {
			now[i] = src.generation()
		}
		mu.Lock()
		defer mu.Unlock()
		if merged == nil || !slices.Equal(now, gens) {
			var remotes []openapi.Remote
			for _, src := range sources {
				remotes = append(remotes, src.documents()...)
			}
			docs, err := openapi.Merge(static, remotes)
			if err != nil {
				s.config.Logger.Error("dynamic OpenAPI documents left out", "server", s.name, "err", err)
				docs = static
			}
			merged, gens = docs, now
		}
		return merged.V2Handler(), merged.V3Handler()
	}
	serveV2 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _ := handlers()
		h.ServeHTTP(w, r)
	})
	serveV3 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, h := handlers()
		h.ServeHTTP(w, r)
	})
	s.mux.Handle("/openapi/v2", serveV2)
	s.mux.Handle("/openapi/v3", serveV3)
	s.mux.Handle("/openapi/v3/", serveV3)
}

// OpenAPISource gives OpenAPI documents that change while the server runs
// (the extensions server's custom resources): Generation changes whenever
// Documents would return something new.
type OpenAPISource struct {
	Generation func() uint64
	Documents  func() []openapi.Remote
}

func (o OpenAPISource) generation() uint64          { return o.Generation() }
func (o OpenAPISource) documents() []openapi.Remote { return o.Documents() }

// SetDynamicOpenAPI adds src to the documents the outermost server of the
// chain serves at /openapi/v2 and /openapi/v3: they are merged into the
// chain's (openapi.Merge) on the first request after Generation changed.
func (s *GenericServer) SetDynamicOpenAPI(src OpenAPISource) {
	s.dynamicOpenAPI.Store(&src)
}

// DynamicOpenAPISources are the sources (SetDynamicOpenAPI) of this server
// and of the servers behind it: a server that serves /openapi/v2 and
// /openapi/v3 through handlers of its own (an aggregator merging its
// backends' documents) merges these in too.
func (s *GenericServer) DynamicOpenAPISources() []OpenAPISource { return s.dynamicOpenAPISources() }

// dynamicOpenAPISources are the sources of this server and of the servers
// behind it.
func (s *GenericServer) dynamicOpenAPISources() []OpenAPISource {
	var out []OpenAPISource
	for d := DelegationTarget(s); d != nil; d = d.NextDelegate() {
		if gs, ok := d.(*GenericServer); ok {
			if src := gs.dynamicOpenAPI.Load(); src != nil {
				out = append(out, *src)
			}
		}
	}
	return out
}
