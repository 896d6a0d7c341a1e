package endpoints

import (
	"testing"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestQueryParametersShared: the routes of every resource share the query
// parameters of their documentation, made once, rather than each route
// making its own (a server installs dozens of resources, up to ten
// parameters a route). The path parameters name the kind and stay per
// resource.
func TestQueryParametersShared(t *testing.T) {
	install := func(resource string) *restful.WebService {
		st, err := registry.NewStore(registry.Options[*v1beta1.Flunder]{
			Resource:        meta.GroupResource{Group: "wardle.example.com", Resource: resource},
			Kind:            "Flunder",
			NamespaceScoped: true,
			StorageVersion:  "v1beta1",
			Strategy:        registry.DefaultStrategy[*v1beta1.Flunder]{},
			Storage:         memory.New(),
		})
		if err != nil {
			t.Fatal(err)
		}
		ws := new(restful.WebService).Path("/apis/wardle.example.com/v1beta1")
		Install(ws, &Scope{Resource: registry.Serve(st)})
		return ws
	}
	params := func(ws *restful.WebService) map[string]map[string]*restful.Parameter {
		out := map[string]map[string]*restful.Parameter{}
		for _, rt := range ws.Routes() {
			m := map[string]*restful.Parameter{}
			for _, p := range rt.ParameterDocs {
				if p.Kind() == restful.QueryParameterKind {
					m[p.Data().Name] = p
				}
			}
			out[rt.Operation] = m
		}
		return out
	}
	a, b := params(install("flunders")), params(install("flunders"))
	checked := 0
	for _, tc := range []struct{ op, param string }{
		{"listWardleExampleComV1beta1NamespacedFlunder", "watch"},
		{"listWardleExampleComV1beta1NamespacedFlunder", "resourceVersion"},
		{"listWardleExampleComV1beta1FlunderForAllNamespaces", "labelSelector"},
		{"createWardleExampleComV1beta1NamespacedFlunder", "fieldManager"},
		{"patchWardleExampleComV1beta1NamespacedFlunder", "force"},
		{"deleteWardleExampleComV1beta1NamespacedFlunder", "propagationPolicy"},
		{"deletecollectionWardleExampleComV1beta1NamespacedFlunder", "dryRun"},
		{"readWardleExampleComV1beta1NamespacedFlunder", "resourceVersion"},
	} {
		pa, pb := a[tc.op][tc.param], b[tc.op][tc.param]
		if pa == nil || pb == nil {
			t.Errorf("%s has no query parameter %s (routes: %v)", tc.op, tc.param, keys(a))
			continue
		}
		if pa != pb {
			t.Errorf("%s's %s: two installs made two parameters, want one shared", tc.op, tc.param)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no parameter checked")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
