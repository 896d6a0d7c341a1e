package aggregator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/openapi"
	"github.com/apikit-dev/apikit/server/respond"
)

// remoteOpenAPI is what was last fetched from a backend, and when.
type remoteOpenAPI struct {
	remote  openapi.Remote
	fetched time.Time
}

// refreshOpenAPI fetches the documents of s's group-version from its
// backend: the paths under /apis/<group>/<version> of its /openapi/v2,
// and the /openapi/v3 document of that group-version. What cannot be
// fetched keeps its last copy; then the served documents are merged again.
func (a *Aggregator) refreshOpenAPI(ctx context.Context, s *APIService, b *backend, base *url.URL) {
	gvPath := "apis/" + s.Spec.Group + "/" + s.Spec.Version
	a.mu.RLock()
	prev := a.remoteOA[s.Name]
	a.mu.RUnlock()
	r := &remoteOpenAPI{remote: openapi.Remote{Name: s.Name, V2Prefixes: []string{"/" + gvPath}}, fetched: time.Now()}
	if prev != nil {
		r.remote.V2, r.remote.V3 = prev.remote.V2, prev.remote.V3
	}
	at := func(path, rawQuery string) *url.URL {
		u := *base
		u.Path, u.RawQuery = strings.TrimSuffix(u.Path, "/")+path, rawQuery
		return &u
	}
	log := a.cfg.Logger.With("apiservice", s.Name)
	if v2, _, err := b.get(ctx, at("/openapi/v2", ""), a.cfg.ProbeTimeout, "application/json"); err != nil {
		log.Debug("aggregator: fetching the OpenAPI v2 document failed", "err", err)
	} else {
		r.remote.V2 = v2
	}
	if v3, err := a.fetchV3(ctx, b, at, gvPath); err != nil {
		log.Debug("aggregator: fetching the OpenAPI v3 document failed", "err", err)
	} else if v3 != nil {
		r.remote.V3 = map[string][]byte{gvPath: v3}
	}
	a.mu.Lock()
	if a.services[s.Name] == nil {
		a.mu.Unlock()
		return
	}
	a.remoteOA[s.Name] = r
	a.mu.Unlock()
	a.mergeOpenAPI()
}

// fetchV3 reads the backend's /openapi/v3 index and the document it lists
// for gvPath (nil when it lists none).
func (a *Aggregator) fetchV3(ctx context.Context, b *backend, at func(path, rawQuery string) *url.URL, gvPath string) ([]byte, error) {
	body, _, err := b.get(ctx, at("/openapi/v3", ""), a.cfg.ProbeTimeout, "application/json")
	if err != nil {
		return nil, err
	}
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &index); err != nil {
		return nil, err
	}
	entry, ok := index.Paths[gvPath]
	if !ok {
		return nil, nil
	}
	rel, err := url.Parse(entry.ServerRelativeURL)
	if err != nil {
		return nil, err
	}
	doc, _, err := b.get(ctx, at(rel.Path, rel.RawQuery), a.cfg.ProbeTimeout, "application/json")
	return doc, err
}

// mergedOpenAPI is what the aggregator serves: the merged documents, and
// the generations of the chain's dynamic sources they hold.
type mergedOpenAPI struct {
	docs        *openapi.Documents
	generations []uint64
}

// dynamicGenerations are the generations of the chain's dynamic OpenAPI
// sources (the extensions server's custom resources) now.
func dynamicGenerations(sources []server.OpenAPISource) []uint64 {
	gens := make([]uint64, len(sources))
	for i, src := range sources {
		gens[i] = src.Generation()
	}
	return gens
}

// mergeOpenAPI builds the served documents: the chain's, with its dynamic
// sources' (custom resources) and every backend's merged in, in
// APIService name order.
func (a *Aggregator) mergeOpenAPI() {
	a.mergeMu.Lock()
	defer a.mergeMu.Unlock()
	local, err := a.localDocs()
	if err != nil {
		return // served as an error by serveOpenAPI
	}
	sources := a.GenericServer.DynamicOpenAPISources()
	// Read before the documents: a change meanwhile merges again.
	gens := dynamicGenerations(sources)
	var remotes []openapi.Remote
	for _, src := range sources {
		remotes = append(remotes, src.Documents()...)
	}
	a.mu.RLock()
	names := make([]string, 0, len(a.remoteOA))
	for n := range a.remoteOA {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		remotes = append(remotes, a.remoteOA[n].remote)
	}
	a.mu.RUnlock()
	merged, err := openapi.Merge(local, remotes)
	if err != nil {
		a.cfg.Logger.Warn("aggregator: merging the backends' OpenAPI documents failed; serving the previous ones", "err", err)
		return
	}
	a.openAPI.Store(&mergedOpenAPI{docs: merged, generations: gens})
}

// serveOpenAPI answers /openapi/v2 and /openapi/v3[/...] with the merged
// documents, merged again first when a dynamic source of the chain
// changed since (a CRD was created, changed or deleted).
func (a *Aggregator) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	sources := a.GenericServer.DynamicOpenAPISources()
	m := a.openAPI.Load()
	if m == nil && len(sources) > 0 || m != nil && !slices.Equal(m.generations, dynamicGenerations(sources)) {
		a.mergeOpenAPI()
		m = a.openAPI.Load()
	}
	var docs *openapi.Documents
	if m != nil {
		docs = m.docs
	} else {
		local, err := a.localDocs()
		if err != nil {
			respond.Error(w, r, meta.NewInternalError(err))
			return
		}
		docs = local
	}
	if r.URL.Path == "/openapi/v2" {
		docs.V2Handler().ServeHTTP(w, r)
		return
	}
	docs.V3Handler().ServeHTTP(w, r)
}
