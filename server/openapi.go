package server

import (
	"fmt"
	"net/http"
	"net/url"
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
// group is installed by then, and none changes while the server runs. When
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
		v2, v3 http.Handler
	)
	handlers := func() (http.Handler, http.Handler) {
		once.Do(func() {
			docs, err := s.OpenAPIDocuments()
			if err != nil {
				// The route table cannot be documented: a programming
				// error, but not one to take the API down for. Say so
				// where clients look.
				s.config.Logger.Error("OpenAPI unavailable", "server", s.name, "err", err)
				fail := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					respond.Error(w, r, meta.NewInternalError(err))
				})
				v2, v3 = fail, fail
				return
			}
			v2, v3 = docs.V2Handler(), docs.V3Handler()
		})
		return v2, v3
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
