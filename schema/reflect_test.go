package schema_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

type port struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port"`
}

type spec struct {
	Ports     []port            `json:"ports,omitempty" listType:"map" listMapKeys:"name,protocol"`
	Merged    []port            `json:"merged,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	Tags      []string          `json:"tags,omitempty" listType:"set"`
	Args      []string          `json:"args,omitempty"`
	Envs      []string          `json:"envs,omitempty" patchStrategy:"merge"`
	Selector  map[string]string `json:"selector,omitempty" mapType:"atomic"`
	Labels    map[string]string `json:"labels,omitempty"`
	Ref       *port             `json:"ref,omitempty" mapType:"atomic"`
	Raw       any               `json:"raw,omitempty"`
	Replicas  *int32            `json:"replicas,omitempty" minimum:"0" default:"1" description:"how many"`
	Mode      string            `json:"mode" enum:"a|b"`
	Data      []byte            `json:"data,omitempty"`
	Count     int64             `json:"count,string"`
	Optional  string            `json:"opt" optional:"true"`
	Skipped   string            `json:"-"`
	unexposed string
}

type object struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            spec `json:"spec"`
}

func (object) SwaggerDoc() map[string]string {
	return map[string]string{"": "An object.", "spec": "The spec."}
}

type self struct {
	Children []self `json:"children,omitempty"`
}

func resolve(t *testing.T, set *schema.Set, n *schema.Schema) *schema.Schema {
	t.Helper()
	r, err := set.Resolve(n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAddTypeShapes(t *testing.T) {
	set := schema.NewSet()
	root, err := set.AddType(reflect.TypeOf(&object{}))
	if err != nil {
		t.Fatal(err)
	}
	if root.Ref != schema.Key(reflect.TypeOf(object{})) {
		t.Fatalf("root = %+v, want a reference to the object", root)
	}
	obj := resolve(t, set, root)
	if obj.Description != "An object." {
		t.Errorf("description = %q", obj.Description)
	}
	var names []string
	for _, p := range obj.Properties {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "kind,apiVersion,metadata,spec" {
		t.Errorf("properties = %s, want TypeMeta inlined, then metadata and spec", got)
	}
	if !obj.IsRequired("spec") || obj.IsRequired("metadata") || obj.IsRequired("kind") {
		t.Errorf("required = %v, want only spec", obj.Required)
	}
	specRef, _ := obj.Property("spec")
	if specRef.Description != "The spec." || specRef.Ref == "" {
		t.Errorf("spec property = %+v, want a documented reference", specRef)
	}
	sp := resolve(t, set, specRef)

	tests := []struct {
		field       string
		typ         string
		listType    schema.ListType
		keys        string
		mapType     schema.MapType
		implied     bool
		patch, pkey string
	}{
		{field: "ports", typ: "array", listType: schema.ListMap, keys: "name,protocol"},
		{field: "merged", typ: "array", listType: schema.ListMap, keys: "name", implied: true, patch: "merge", pkey: "name"},
		{field: "tags", typ: "array", listType: schema.ListSet},
		{field: "args", typ: "array"},
		{field: "envs", typ: "array", listType: schema.ListSet, implied: true, patch: "merge"},
		{field: "selector", typ: "object", mapType: schema.MapAtomic},
		{field: "labels", typ: "object"},
		{field: "ref", mapType: schema.MapAtomic},
		{field: "replicas", typ: "integer"},
		{field: "mode", typ: "string"},
		{field: "data", typ: "string"},
		{field: "count", typ: "string"},
		{field: "opt", typ: "string"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			n, ok := sp.Property(tt.field)
			if !ok {
				t.Fatalf("no property %s", tt.field)
			}
			if n.Type != tt.typ || n.ListType != tt.listType || strings.Join(n.ListMapKeys, ",") != tt.keys ||
				n.MapType != tt.mapType || n.ImpliedListType != tt.implied || n.PatchStrategy != tt.patch || n.PatchMergeKey != tt.pkey {
				t.Errorf("%s = %+v", tt.field, n)
			}
		})
	}
	for _, name := range []string{"unexposed", "Skipped", "-"} {
		if _, ok := sp.Property(name); ok {
			t.Errorf("property %s is published", name)
		}
	}
	if raw, _ := sp.Property("raw"); !raw.Unknown {
		t.Errorf("raw = %+v, want any value", raw)
	}
	if r, _ := sp.Property("replicas"); r.Minimum == nil || *r.Minimum != 0 || r.Default != int64(1) || r.Description != "how many" || r.Format != "int32" {
		t.Errorf("replicas = %+v", r)
	}
	if m, _ := sp.Property("mode"); len(m.Enum) != 2 || !sp.IsRequired("mode") {
		t.Errorf("mode = %+v, required %v", m, sp.Required)
	}
	if sp.IsRequired("opt") || sp.IsRequired("ports") || !sp.IsRequired("count") {
		t.Errorf("required = %v", sp.Required)
	}
	// The named referenced schema is shared, not changed by the tag.
	if ref, _ := sp.Property("ref"); resolve(t, set, ref).MapType != "" {
		t.Errorf("the mapType of a use changed the named schema")
	}

	md, _ := obj.Property("metadata")
	om := resolve(t, set, md)
	if ct, _ := om.Property("creationTimestamp"); resolve(t, set, ct).Type != "string" {
		t.Errorf("creationTimestamp = %+v, want a string (meta.Time is a Typer)", resolve(t, set, ct))
	}
	if or, _ := om.Property("ownerReferences"); or.ListType != schema.ListMap || or.ListMapKeys[0] != "uid" {
		t.Errorf("ownerReferences = %+v", or)
	}
}

func TestAddTypeRecursive(t *testing.T) {
	set := schema.NewSet()
	n, err := set.AddType(reflect.TypeOf(self{}))
	if err != nil {
		t.Fatal(err)
	}
	s := resolve(t, set, n)
	c, _ := s.Property("children")
	if c.Items.Ref != n.Ref {
		t.Errorf("children items = %+v, want a reference to the type itself", c.Items)
	}
}

func TestAddTypeErrors(t *testing.T) {
	tests := []struct {
		name   string
		sample any
		want   string
	}{
		{"map list without keys", struct {
			L []port `json:"l" listType:"map"`
		}{}, `listType "map" needs listMapKeys`},
		{"keys without map", struct {
			L []port `json:"l" listType:"set" listMapKeys:"name"`
		}{}, `listMapKeys needs listType "map"`},
		{"unknown list type", struct {
			L []port `json:"l" listType:"bag"`
		}{}, `listType "bag" is not atomic, set or map`},
		{"list type on a scalar", struct {
			S string `json:"s" listType:"set"`
		}{}, "listType and listMapKeys are for lists, not a string"},
		{"map type on a list", struct {
			L []string `json:"l" mapType:"atomic"`
		}{}, "mapType is for maps and structs, not an array"},
		{"unknown map type", struct {
			M map[string]string `json:"m" mapType:"sometimes"`
		}{}, `mapType "sometimes" is not atomic or granular`},
		{"int map keys", struct {
			M map[int]string `json:"m"`
		}{}, "map keys must be strings"},
		{"channel", struct {
			C chan int `json:"c"`
		}{}, "a chan has no JSON schema"},
		{"bad minimum", struct {
			I int `json:"i" minimum:"x"`
		}{}, `minimum tag "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := schema.NewSet().AddType(reflect.TypeOf(tt.sample))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestSetAdd(t *testing.T) {
	set := schema.NewSet()
	if err := set.Add("com.example.v1.Widget", &schema.Schema{Type: "object"}); err != nil {
		t.Fatal(err)
	}
	if err := set.Add("com.example.v1.Widget", &schema.Schema{}); err == nil {
		t.Error("a second schema under one key was accepted")
	}
	if _, err := set.Resolve(&schema.Schema{Ref: "missing"}); err == nil {
		t.Error("a dangling reference resolved")
	}
	if got := set.Keys(); len(got) != 1 || got[0] != "com.example.v1.Widget" {
		t.Errorf("keys = %v", got)
	}
}
