package openapi_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// TestMergeExtensions: the merge semantics of the schema model are
// published on the definitions, in v2 and in v3, as kube-apiserver
// publishes ObjectMeta's: kubectl's client-side apply computes strategic
// merge patches from the patch ones, server-side apply clients read the
// list and map types.
func TestMergeExtensions(t *testing.T) {
	srv := newWardle(t, nil)
	const om = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	want := map[string]map[string]any{
		"ownerReferences": {
			"x-kubernetes-list-type":       "map",
			"x-kubernetes-list-map-keys":   []any{"uid"},
			"x-kubernetes-patch-strategy":  "merge",
			"x-kubernetes-patch-merge-key": "uid",
		},
		"finalizers": {
			"x-kubernetes-list-type":      "set",
			"x-kubernetes-patch-strategy": "merge",
		},
		"managedFields": {"x-kubernetes-list-type": "atomic"},
		"labels":        {},
	}
	check := func(t *testing.T, props map[string]any) {
		t.Helper()
		for field, exts := range want {
			p, ok := props[field].(map[string]any)
			if !ok {
				t.Errorf("%s: no property %s", om, field)
				continue
			}
			got := map[string]any{}
			for k, v := range p {
				if len(k) > 13 && k[:13] == "x-kubernetes-" {
					got[k] = v
				}
			}
			if !reflect.DeepEqual(got, exts) {
				t.Errorf("%s.%s extensions = %v, want %v", om, field, got, exts)
			}
		}
	}

	t.Run("v2", func(t *testing.T) {
		rec := get(t, srv.Handler, "/openapi/v2")
		var doc struct {
			Definitions map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"definitions"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		check(t, doc.Definitions[om].Properties)
	})
	t.Run("v3", func(t *testing.T) {
		url := v3Index(t, srv.Handler)["apis/wardle.example.com/v1beta1"]
		rec := get(t, srv.Handler, url)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", url, rec.Code)
		}
		var doc v3Doc
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		props, _ := doc.Components.Schemas[om]["properties"].(map[string]any)
		check(t, props)
	})
}
