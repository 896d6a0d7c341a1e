package openapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/openapi"
)

func TestMerge(t *testing.T) {
	front := newServer(t, "front", server.NewEmptyDelegate(), nil)
	local := buildDocs(t, front)
	backend := newWardle(t, nil)
	remoteDocs := buildDocs(t, backend)
	v3, _, ok := remoteDocs.V3JSON("apis/wardle.example.com/v1beta1")
	if !ok {
		t.Fatal("the backend has no v1beta1 document")
	}
	localV2 := string(local.V2JSON())
	merged, err := openapi.Merge(local, []openapi.Remote{{
		Name: "v1beta1.wardle.example.com", V2: remoteDocs.V2JSON(),
		V2Prefixes: []string{"/apis/wardle.example.com/v1beta1"},
		V3:         map[string][]byte{"apis/wardle.example.com/v1beta1": v3},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if string(local.V2JSON()) != localV2 {
		t.Error("Merge changed the local documents")
	}
	sw := merged.Swagger()
	if _, ok := sw.Paths.Paths["/apis/wardle.example.com/v1beta1/namespaces/{namespace}/flunders"]; !ok {
		t.Error("the backend's v1beta1 paths are missing")
	}
	if _, ok := sw.Paths.Paths["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"]; ok {
		t.Error("a path outside the prefixes was merged")
	}
	if _, ok := sw.Definitions["com.example.wardle.v1beta1.Flunder"]; !ok {
		t.Error("the backend's definitions are missing")
	}
	if got := strings.Join(merged.V3Paths(), ","); got != "apis/wardle.example.com/v1beta1" {
		t.Errorf("V3Paths = %s", got)
	}
	doc, hash, _ := merged.V3JSON("apis/wardle.example.com/v1beta1")
	if _, want, _ := remoteDocs.V3JSON("apis/wardle.example.com/v1beta1"); hash != want || !json.Valid(doc) {
		t.Errorf("the v3 document's hash %s, want the backend's %s", hash, want)
	}
	h := merged.V3Handler()
	if rec := get(t, h, "/openapi/v3/apis/wardle.example.com/v1beta1?hash="+hash); rec.Code != 200 || rec.Header().Get("Cache-Control") != "public, immutable" {
		t.Errorf("serving the merged v3 document: %d %v", rec.Code, rec.Header())
	}
	if _, err := openapi.Merge(local, []openapi.Remote{{Name: "bad", V2: []byte("{")}}); err == nil || !strings.Contains(err.Error(), "the v2 document of bad") {
		t.Errorf("a broken document: %v", err)
	}
}
