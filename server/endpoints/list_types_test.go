package endpoints_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strconv"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestListItemTypes checks that with OmitItemTypes a LIST's items carry no
// kind and apiVersion, as kube-apiserver serves lists of typed resources
// (the list's own kind and apiVersion stay), and that without it (custom
// resources) they keep them; in JSON, gzip-compressed JSON and YAML, with a
// Content-Length that matches the body.
func TestListItemTypes(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	st := benchStore(t, mem)
	// 300 Flunders make a LIST over the gzip threshold.
	for i := range 300 {
		f := benchFlunder(i)
		f.Annotations = map[string]string{"note": string(bytes.Repeat([]byte("x"), 400))}
		if _, err := st.Create(context.Background(), "bench", f, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, omit := range []bool{true, false} {
		c := restful.NewContainer()
		ws := new(restful.WebService).Path("/apis/wardle.example.com/v1beta1")
		endpoints.Install(ws, &endpoints.Scope{Resource: registry.Serve(st), OmitItemTypes: omit})
		c.Add(ws)
		for _, tc := range []struct{ name, path, accept, encoding string }{
			{"one item", flundersPath + "?limit=1", "application/json", ""},
			{"JSON", flundersPath, "application/json", ""},
			{"gzip", flundersPath, "application/json", "gzip"},
			{"YAML", flundersPath + "?limit=2", "application/yaml", ""},
			{"none", "/apis/wardle.example.com/v1beta1/namespaces/empty/flunders", "application/json", ""},
		} {
			t.Run(tc.name+"/omit="+strconv.FormatBool(omit), func(t *testing.T) {
				r := httptest.NewRequest("GET", tc.path, nil)
				r.Header.Set("Accept", tc.accept)
				if tc.encoding != "" {
					r.Header.Set("Accept-Encoding", tc.encoding)
				}
				w := httptest.NewRecorder()
				c.ServeHTTP(w, r)
				if w.Code != 200 {
					t.Fatalf("GET %s: %d %s", tc.path, w.Code, w.Body)
				}
				body := w.Body.Bytes()
				if got := w.Header().Get("Content-Encoding"); got != tc.encoding {
					t.Fatalf("Content-Encoding %q, want %q", got, tc.encoding)
				}
				if tc.encoding == "gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					if body, err = io.ReadAll(zr); err != nil {
						t.Fatal(err)
					}
				} else if cl := w.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(body)) {
					t.Fatalf("Content-Length %s for a body of %d bytes", cl, len(body))
				}
				if tc.accept == "application/yaml" {
					j, err := yaml.YAMLToJSON(body)
					if err != nil {
						t.Fatal(err)
					}
					body = j
				}
				var list struct {
					Kind, APIVersion string
					Items            []map[string]any
				}
				if err := json.Unmarshal(body, &list); err != nil {
					t.Fatalf("not JSON: %v\n%.300s", err, body)
				}
				if list.Kind != "FlunderList" || list.APIVersion != "wardle.example.com/v1beta1" {
					t.Errorf("list kind %q, apiVersion %q", list.Kind, list.APIVersion)
				}
				for _, it := range list.Items {
					_, kind := it["kind"]
					_, apiVersion := it["apiVersion"]
					if kind == omit || apiVersion == omit {
						t.Fatalf("with OmitItemTypes %v an item has kind %v, apiVersion %v", omit, kind, apiVersion)
					}
					if md, _ := it["metadata"].(map[string]any); md["name"] == nil {
						t.Fatalf("an item lost its metadata: %v", it)
					}
				}
				if tc.name != "none" && len(list.Items) == 0 {
					t.Fatal("no items")
				}
			})
		}
	}
}
