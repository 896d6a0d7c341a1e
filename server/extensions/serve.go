package extensions

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/go-openapi/spec"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/openapi"
	"github.com/apikit-dev/apikit/server/respond"
)

// servedCRD is what serving one CRD's custom resources needs, built once
// per stored revision of the CRD and never changed after: requests read it
// from the serving state without locks.
type servedCRD struct {
	crd         *CustomResourceDefinition
	terminating bool
	// versions are the served versions by name.
	versions map[string]*servedVersion
}

// servedVersion is one served version of a CRD.
type servedVersion struct {
	resource registry.Resource
	// ws holds the version's routes, as endpoints.Install made them: the
	// table dispatch, discovery and documentation read.
	ws      *restful.WebService
	handler http.Handler
	// definition is the kind's OpenAPI definition.
	definition spec.Schema
}

// state is what the handler serves: every CRD served, by name, and by
// group, version and resource; replaced as a whole on every change
// (atomic.Pointer in Server), never modified.
type state struct {
	byName map[string]*servedCRD
	byGVR  map[meta.GroupVersionResource]*servedCRD
	// groups are the CRD groups for discovery, sorted by name, their
	// versions in kube-apiserver's priority order.
	groups []*server.APIGroupInfo
	// generation counts the states published; docs are the OpenAPI
	// documents, built on first use.
	generation uint64
	docsOnce   sync.Once
	docs       []openapi.Remote
}

func newState(crds map[string]*servedCRD, generation uint64) *state {
	st := &state{byName: crds, byGVR: map[meta.GroupVersionResource]*servedCRD{}, generation: generation}
	versions := map[string]map[string][]*servedVersion{} // group -> version -> resources
	names := make([]string, 0, len(crds))
	for name := range crds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sc := crds[name]
		g := sc.crd.Spec.Group
		for v, sv := range sc.versions {
			st.byGVR[meta.GroupVersionResource{Group: g, Version: v, Resource: sc.crd.Status.AcceptedNames.Plural}] = sc
			if versions[g] == nil {
				versions[g] = map[string][]*servedVersion{}
			}
			versions[g][v] = append(versions[g][v], sv)
		}
	}
	for g, vs := range versions {
		info := &server.APIGroupInfo{Name: g}
		order := make([]string, 0, len(vs))
		for v := range vs {
			order = append(order, v)
		}
		sort.Slice(order, func(i, j int) bool { return compareVersions(order[i], order[j]) > 0 })
		for _, v := range order {
			vi := server.APIVersionInfo{Version: v}
			var services []*restful.WebService
			for _, sv := range vs[v] {
				vi.Resources = append(vi.Resources, sv.resource)
				services = append(services, sv.ws)
			}
			vi.DescribeRoutes(services...)
			info.Versions = append(info.Versions, vi)
		}
		st.groups = append(st.groups, info)
	}
	sort.Slice(st.groups, func(i, j int) bool { return st.groups[i].Name < st.groups[j].Name })
	return st
}

// group returns the discovery of one CRD group, nil when none is served.
func (st *state) group(name string) *server.APIGroupInfo {
	i, ok := slices.BinarySearchFunc(st.groups, name, func(g *server.APIGroupInfo, n string) int { return strings.Compare(g.Name, n) })
	if !ok {
		return nil
	}
	return st.groups[i]
}

// serveHTTP serves the CRD groups' paths (/apis/<group>[/<version>[/...]])
// as kube-apiserver's crdHandler does, and hands every other path to next.
func (st *state) serveHTTP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	rest := strings.TrimPrefix(r.URL.Path, "/apis/")
	parts := strings.SplitN(strings.TrimSuffix(rest, "/"), "/", 3)
	g := st.group(parts[0])
	if g == nil || parts[0] == "" {
		next.ServeHTTP(w, r)
		return
	}
	if len(parts) == 1 {
		metrics.MarkRouted(r.Context(), "/apis/"+g.Name)
		respond.JSON(w, http.StatusOK, g.DiscoveryGroup())
		return
	}
	i := slices.IndexFunc(g.Versions, func(v server.APIVersionInfo) bool { return v.Version == parts[1] })
	if i < 0 {
		next.ServeHTTP(w, r)
		return
	}
	if len(parts) == 2 {
		metrics.MarkRouted(r.Context(), "/apis/"+g.Name+"/"+parts[1])
		respond.JSON(w, http.StatusOK, g.Versions[i].ResourceList(g.Name))
		return
	}
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		respond.Error(w, r, meta.NewNotFoundPath())
		return
	}
	sc := st.byGVR[meta.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}]
	if sc == nil {
		respond.Error(w, r, meta.NewNotFoundPath())
		return
	}
	if sc.terminating && info.Verb == "create" {
		err := meta.NewMethodNotSupported(meta.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb)
		err.ErrStatus.Message = info.Verb + " not allowed while custom resource definition is terminating"
		respond.Error(w, r, err)
		return
	}
	sc.versions[info.APIVersion].handler.ServeHTTP(w, r)
}

// routeMux dispatches the routes of one WebService as the server's router
// does: by http.ServeMux patterns, to each route's endpoints.To handler.
func routeMux(ws *restful.WebService) (http.Handler, error) {
	mux := http.NewServeMux()
	methods := map[string][]string{}
	for _, rt := range ws.Routes() {
		h, ok := rt.Metadata[endpoints.MetadataHandler].(http.Handler)
		if !ok {
			return nil, fmt.Errorf("extensions: route %s %s has no handler", rt.Method, rt.Path)
		}
		if err := handle(mux, rt.Method+" "+rt.Path, h); err != nil {
			return nil, err
		}
		methods[rt.Path] = append(methods[rt.Path], rt.Method)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		for _, rt := range ws.Routes() {
			probe := r.Clone(r.Context())
			probe.Method = rt.Method
			if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
				err := meta.NewMethodNotSupported(meta.GroupResource{}, r.Method)
				err.ErrStatus.Message = fmt.Sprintf("the server does not allow this method on the requested resource (%s %s)", r.Method, r.URL.Path)
				respond.Error(w, r, err)
				return
			}
		}
		respond.Error(w, r, meta.NewNotFoundPath())
	})
	return mux, nil
}

func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("extensions: route %s: %v", pattern, p)
		}
	}()
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		metrics.MarkRouted(r.Context(), "")
		h.ServeHTTP(w, r)
	})
	return nil
}

// resourceSchema is the schema of a version's objects as server-side
// apply merges them: the CRD's schema with apiVersion, kind and the
// metadata of every object.
func resourceSchema(set *schema.Set, crd *schema.Schema) (*schema.Schema, error) {
	om, err := set.AddType(reflect.TypeOf(meta.ObjectMeta{}))
	if err != nil {
		return nil, err
	}
	root := *crd
	root.Type = "object"
	root.Properties = []schema.Property{
		{Name: "apiVersion", Schema: &schema.Schema{Type: "string"}},
		{Name: "kind", Schema: &schema.Schema{Type: "string"}},
		{Name: "metadata", Schema: om},
	}
	for _, p := range crd.Properties {
		switch p.Name {
		case "apiVersion", "kind", "metadata":
			continue
		}
		root.Properties = append(root.Properties, p)
	}
	return &root, nil
}

// compareVersions orders versions as kube-apiserver prefers them: GA
// before beta before alpha, higher numbers first within each, and
// versions of another form last, alphabetically. It returns > 0 when a is
// preferred.
func compareVersions(a, b string) int {
	ma, qa, na, oka := parseKubeVersion(a)
	mb, qb, nb, okb := parseKubeVersion(b)
	switch {
	case oka && !okb:
		return 1
	case !oka && okb:
		return -1
	case !oka && !okb:
		return strings.Compare(b, a)
	}
	if qa != qb {
		return qa - qb
	}
	if ma != mb {
		return ma - mb
	}
	return na - nb
}

// parseKubeVersion reads v<major>[(alpha|beta)<minor>]: quality is 2 for
// GA, 1 for beta, 0 for alpha.
func parseKubeVersion(v string) (major, quality, minor int, ok bool) {
	if !strings.HasPrefix(v, "v") {
		return 0, 0, 0, false
	}
	rest := v[1:]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || rest[0] == '0' {
		return 0, 0, 0, false
	}
	major, _ = strconv.Atoi(rest[:i])
	rest = rest[i:]
	if rest == "" {
		return major, 2, 0, true
	}
	for q, word := range []string{"alpha", "beta"} {
		if num, found := strings.CutPrefix(rest, word); found {
			n, err := strconv.Atoi(num)
			if err != nil || n <= 0 || num[0] == '0' {
				return 0, 0, 0, false
			}
			return major, q, n, true
		}
	}
	return 0, 0, 0, false
}
