package schema_test

import (
	"reflect"
	"testing"

	smd "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/apikit-dev/apikit/schema"
)

// TestSMD: the merge semantics of the model become structured-merge-diff's
// element relationships, so apply merges as OpenAPI publishes.
func TestSMD(t *testing.T) {
	set := schema.NewSet()
	root, err := set.AddType(reflect.TypeOf(object{}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := set.SMD()
	if err != nil {
		t.Fatal(err)
	}
	specKey := schema.Key(reflect.TypeOf(spec{}))
	specType, ok := s.FindNamedType(specKey)
	if !ok || specType.Map == nil {
		t.Fatalf("no struct %s in %v", specKey, s)
	}
	field := func(name string) smd.TypeRef {
		t.Helper()
		f, ok := specType.Map.FindField(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		return f.Type
	}
	tests := []struct {
		field string
		check func(smd.TypeRef) bool
	}{
		{"ports", func(r smd.TypeRef) bool {
			return r.Inlined.List != nil && r.Inlined.List.ElementRelationship == smd.Associative && reflect.DeepEqual(r.Inlined.List.Keys, []string{"name", "protocol"})
		}},
		{"merged", func(r smd.TypeRef) bool {
			return r.Inlined.List != nil && r.Inlined.List.ElementRelationship == smd.Associative && reflect.DeepEqual(r.Inlined.List.Keys, []string{"name"})
		}},
		{"tags", func(r smd.TypeRef) bool {
			return r.Inlined.List != nil && r.Inlined.List.ElementRelationship == smd.Associative && len(r.Inlined.List.Keys) == 0
		}},
		{"args", func(r smd.TypeRef) bool {
			return r.Inlined.List != nil && r.Inlined.List.ElementRelationship == smd.Atomic
		}},
		{"selector", func(r smd.TypeRef) bool {
			return r.Inlined.Map != nil && r.Inlined.Map.ElementRelationship == smd.Atomic
		}},
		{"labels", func(r smd.TypeRef) bool {
			return r.Inlined.Map != nil && r.Inlined.Map.ElementRelationship == smd.Separable
		}},
		{"ref", func(r smd.TypeRef) bool {
			return r.NamedType != nil && r.ElementRelationship != nil && *r.ElementRelationship == smd.Atomic
		}},
		{"raw", func(r smd.TypeRef) bool { return r.NamedType != nil && *r.NamedType == "__untyped_deduced_" }},
		{"mode", func(r smd.TypeRef) bool { return r.Inlined.Scalar != nil && *r.Inlined.Scalar == smd.String }},
		{"replicas", func(r smd.TypeRef) bool { return r.Inlined.Scalar != nil && *r.Inlined.Scalar == smd.Numeric }},
	}
	for _, tt := range tests {
		if r := field(tt.field); !tt.check(r) {
			t.Errorf("%s = %+v", tt.field, r)
		}
	}
	if _, ok := s.FindNamedType(root.Ref); !ok {
		t.Errorf("the root %s has no typedef", root.Ref)
	}
}

// TestSMDShared: every resource's field managers convert the same Set, so
// one conversion serves them until a schema is added, which a later
// conversion must see.
func TestSMDShared(t *testing.T) {
	set := schema.NewSet()
	if _, err := set.AddType(reflect.TypeOf(spec{})); err != nil {
		t.Fatal(err)
	}
	first, err := set.SMD()
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func() error
		same   bool
	}{
		{"unchanged", func() error { return nil }, true},
		{"a type already filed", func() error { _, err := set.AddType(reflect.TypeOf(spec{})); return err }, true},
		{"a new type", func() error { _, err := set.AddType(reflect.TypeOf(self{})); return err }, false},
		{"a schema added by key", func() error { return set.Add("custom.Thing", &schema.Schema{Type: "string"}) }, false},
	}
	prev := first
	for _, step := range steps {
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got, err := set.SMD()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if (got == prev) != step.same {
			t.Errorf("%s: conversion reused = %v, want %v", step.name, got == prev, step.same)
		}
		if !step.same {
			for _, key := range set.Keys() {
				if _, ok := got.FindNamedType(key); !ok {
					t.Errorf("%s: %s missing from the new conversion", step.name, key)
				}
			}
		}
		prev = got
	}
}

// reference is atomic, as Kubernetes' +structType=atomic makes core/v1's
// ObjectReference.
type reference struct {
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
}

func (reference) AtomicStruct() {}

type referrer struct {
	Ref  reference   `json:"ref"`
	Refs []reference `json:"refs,omitempty" listType:"map" listMapKeys:"name"`
}

// TestAtomicStruct: an AtomicStruct's named schema is atomic wherever it is
// used, in OpenAPI's terms (MapType) and in structured-merge-diff's, whose
// managed fields then own the value whole.
func TestAtomicStruct(t *testing.T) {
	set := schema.NewSet()
	root, err := set.AddType(reflect.TypeOf(referrer{}))
	if err != nil {
		t.Fatal(err)
	}
	refKey := schema.Key(reflect.TypeOf(reference{}))
	if n := resolve(t, set, &schema.Schema{Ref: refKey}); n.MapType != schema.MapAtomic {
		t.Errorf("reference's schema: MapType %q, want atomic", n.MapType)
	}
	if n := resolve(t, set, root); n.MapType != "" {
		t.Errorf("referrer's schema: MapType %q, want none", n.MapType)
	}
	s, err := set.SMD()
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]smd.ElementRelationship{refKey: smd.Atomic, root.Ref: smd.Separable} {
		if typ, ok := s.FindNamedType(key); !ok || typ.Map == nil || typ.Map.ElementRelationship != want {
			t.Errorf("SMD type %s = %+v, want a map %s", key, typ, want)
		}
	}
}
