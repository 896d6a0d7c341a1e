package openapi_test

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Widget is a cluster-scoped test kind with a status subresource and the
// field shapes wardle lacks.
type Widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec"`
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is a Widget's desired state.
type WidgetSpec struct {
	Size     int32           `json:"size" description:"How big the widget is."`
	Parts    []Part          `json:"parts,omitempty"`
	ByName   map[string]Part `json:"byName,omitempty"`
	Deadline *meta.Time      `json:"deadline,omitempty"`
	Secret   string          `json:"-"`
}

// Part is a piece of a Widget.
type Part struct {
	Name string `json:"name"`
}

// WidgetStatus is a Widget's observed state.
type WidgetStatus struct {
	Ready bool `json:"ready,omitempty"`
}

var widgets = []served{{"test.apikit.dev", "v1", "Widget", "widgets", false, true}}

func widgetGroup(t testing.TB) *server.APIGroupInfo {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { _ = store.Close() })
	st, err := registry.NewStore(registry.Options[*Widget]{
		Resource: meta.GroupResource{Group: "test.apikit.dev", Resource: "widgets"}, Kind: "Widget",
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*Widget]{}, Storage: store, StatusSubresource: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return server.NewAPIGroupInfo("test.apikit.dev").AddVersion("v1", registry.Serve(st))
}

// newChain is an outer server serving widgets in front of one serving
// wardle: the outer one documents both.
func newChain(t testing.TB) *server.GenericServer {
	t.Helper()
	inner := newServer(t, "inner", server.NewEmptyDelegate(), nil, wardleGroup(t))
	outer := newServer(t, "outer", inner, nil, widgetGroup(t))
	outer.PrepareRun()
	return outer
}

func TestChainV2(t *testing.T) {
	sw := swagger(t, newChain(t).Handler)
	checkV2Operations(t, sw, append(append([]served(nil), wardle...), widgets...))
	defs := sw.Definitions
	w := defs["dev.apikit.test.v1.Widget"]
	if strings.Join(w.Required, ",") != "spec" {
		t.Errorf("Widget requires %v, want [spec] (the field without omitempty)", w.Required)
	}
	s, ok := defs["dev.apikit.test.v1.WidgetSpec"]
	if !ok {
		t.Fatal("WidgetSpec is not named after its kind's group-version")
	}
	if _, leaked := s.Properties["Secret"]; leaked || len(s.Properties) != 4 {
		t.Errorf("WidgetSpec properties = %v", s.Properties)
	}
	if p := s.Properties["parts"]; p.Items == nil || p.Items.Schema.Ref.String() != "#/definitions/dev.apikit.test.v1.Part" {
		t.Errorf("parts = %+v", p.SchemaProps)
	}
	if p := s.Properties["byName"]; p.AdditionalProperties == nil || p.AdditionalProperties.Schema.Ref.String() != "#/definitions/dev.apikit.test.v1.Part" {
		t.Errorf("byName = %+v", p.SchemaProps)
	}
	if p := s.Properties["deadline"]; p.Ref.String() != "#/definitions/"+metaV1+"Time" {
		t.Errorf("deadline = %+v", p.SchemaProps)
	}
	if p := s.Properties["size"]; !p.Type.Contains("integer") || p.Format != "int32" || p.Description != "How big the widget is." {
		t.Errorf("size = %+v", p.SchemaProps)
	}
}

// refs collects every $ref in a decoded JSON document.
func refs(v any, into map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		if r, ok := t["$ref"].(string); ok {
			into[r] = true
		}
		for _, c := range t {
			refs(c, into)
		}
	case []any:
		for _, c := range t {
			refs(c, into)
		}
	}
}

func TestV3Documents(t *testing.T) {
	h := newChain(t).Handler
	index := v3Index(t, h)
	byGV := map[string][]served{}
	for _, r := range append(append([]served(nil), wardle...), widgets...) {
		key := strings.TrimPrefix(r.gv(), "/")
		byGV[key] = append(byGV[key], r)
	}
	if len(index) != len(byGV) {
		t.Errorf("index lists %v, want %d group-versions", index, len(byGV))
	}
	for gv, resources := range byGV {
		t.Run(gv, func(t *testing.T) {
			url, ok := index[gv]
			if !ok {
				t.Fatalf("index has no %s", gv)
			}
			rec := get(t, h, url, "Accept", "application/json")
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", url, rec.Code, rec.Body)
			}
			sum := sha512.Sum512(rec.Body.Bytes())
			if want := "/openapi/v3/" + gv + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:])); url != want {
				t.Errorf("serverRelativeURL = %s, want the document's SHA-512: %s", url, want)
			}
			var doc v3Doc
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			var raw any
			_ = json.Unmarshal(rec.Body.Bytes(), &raw)
			if doc.OpenAPI != "3.0.0" {
				t.Errorf("openapi = %q", doc.OpenAPI)
			}
			all := map[string]bool{}
			refs(raw, all)
			for r := range all {
				name, ok := strings.CutPrefix(r, "#/components/schemas/")
				if !ok {
					t.Errorf("reference %s does not point at components.schemas", r)
				} else if _, ok := doc.Components.Schemas[name]; !ok {
					t.Errorf("reference %s does not resolve", r)
				}
			}
			for path := range doc.Paths {
				if !strings.HasPrefix(path, "/"+gv+"/") {
					t.Errorf("path %s is not in %s", path, gv)
				}
			}
			for _, r := range resources {
				checkV3Resource(t, &doc, r)
			}
		})
	}
}

// checkV3Resource checks what kubectl reads for r: the schema with its GVK
// (explain), the GVK on the cluster-wide list path (explain finds the kind
// there), and the PATCH operations' fieldValidation parameter (server-side
// validation) and request body media types (merge patch, not strategic).
func checkV3Resource(t *testing.T, doc *v3Doc, r served) {
	t.Helper()
	found := false
	for _, s := range doc.Components.Schemas {
		list, _ := s["x-kubernetes-group-version-kind"].([]any)
		for _, e := range list {
			m := e.(map[string]any)
			if m["group"] == r.group && m["version"] == r.version && m["kind"] == r.kind {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no schema carries %s/%s %s", r.group, r.version, r.kind)
	}
	list := doc.Paths[r.gv()+"/"+r.resource]["get"]
	if list.GVK["kind"] != r.kind || list.GVK["group"] != r.group || list.GVK["version"] != r.version || list.Action != "list" {
		t.Errorf("GET %s/%s: gvk %v action %q", r.gv(), r.resource, list.GVK, list.Action)
	}
	if s := list.Responses["200"].Content["application/json"]["schema"]; s == nil ||
		s.(map[string]any)["$ref"] != "#/components/schemas/"+r.definition()+"List" {
		t.Errorf("list response schema = %v", s)
	}
	patches := 0
	for path, item := range doc.Paths {
		op, ok := item["patch"]
		if !ok || op.GVK["kind"] != r.kind {
			continue
		}
		patches++
		hasFV := false
		for _, p := range op.Parameters {
			hasFV = hasFV || (p.Name == "fieldValidation" && p.In == "query")
			if p.In == "path" && !p.Required {
				t.Errorf("PATCH %s: path parameter %s not required", path, p.Name)
			}
		}
		if !hasFV {
			t.Errorf("PATCH %s has no fieldValidation parameter", path)
		}
		if op.RequestBody == nil || !op.RequestBody.Required {
			t.Fatalf("PATCH %s: request body %+v", path, op.RequestBody)
		}
		// Strategic merge patch and apply are listed, as kube-apiserver
		// lists them for its own types: kubectl apply then computes a
		// strategic merge patch from the schema.
		_, smp := op.RequestBody.Content["application/strategic-merge-patch+json"]
		if _, apply := op.RequestBody.Content["application/apply-patch+yaml"]; !smp || !apply || len(op.RequestBody.Content) != 4 {
			t.Errorf("PATCH %s consumes %v, want JSON patch, merge patch, strategic merge patch and apply", path, op.RequestBody.Content)
		}
		for mt, c := range op.RequestBody.Content {
			if c["schema"].(map[string]any)["$ref"] != "#/components/schemas/"+metaV1+"Patch" {
				t.Errorf("PATCH %s %s body schema = %v", path, mt, c["schema"])
			}
		}
	}
	if want := map[bool]int{false: 1, true: 2}[r.status]; patches != want {
		t.Errorf("%d PATCH operations for %s, want %d", patches, r.kind, want)
	}
	obj := doc.Components.Schemas[r.definition()]
	md, _ := obj["properties"].(map[string]any)["metadata"].(map[string]any)
	allOf, _ := md["allOf"].([]any)
	if len(allOf) != 1 || allOf[0].(map[string]any)["$ref"] != "#/components/schemas/"+metaV1+"ObjectMeta" ||
		!strings.HasPrefix(md["description"].(string), "Standard object's metadata") {
		t.Errorf("%s.metadata = %v, want allOf ObjectMeta with a description", r.kind, md)
	}
}

// TestV3DocumentsAreSeparate checks that a group-version's document holds
// its own schemas, not the whole server's.
func TestV3DocumentsAreSeparate(t *testing.T) {
	h := newChain(t).Handler
	index := v3Index(t, h)
	var doc v3Doc
	if err := json.Unmarshal(get(t, h, index["apis/wardle.example.com/v1alpha1"]).Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for name := range doc.Components.Schemas {
		if strings.Contains(name, ".v1beta1.") || strings.Contains(name, "Widget") {
			t.Errorf("v1alpha1 document holds %s", name)
		}
	}
	for _, name := range []string{"com.example.wardle.v1alpha1.Flunder", "com.example.wardle.v1alpha1.FischerList", metaV1 + "Time", metaV1 + "DeleteOptions"} {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("v1alpha1 document lacks %s", name)
		}
	}
}
