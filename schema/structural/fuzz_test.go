package structural

import (
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/schema"
)

// fuzzSchemas seed the fuzzers with schemas using every feature.
var fuzzSchemas = []string{
	spec(`{"type":"integer","maximum":10,"minimum":0,"multipleOf":2,"enum":[2,4]}`),
	spec(`{"type":"string","maxLength":3,"minLength":1,"pattern":"^[a-z]+$","format":"uuid"}`),
	spec(`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"name":{"type":"string","default":"x"}}}}`),
	spec(`{"type":"array","x-kubernetes-list-type":"set","uniqueItems":true,"minItems":1,"maxItems":3,"items":{"type":"string"}}`),
	spec(`{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}`),
	spec(`{"type":"object","minProperties":1,"maxProperties":2,"additionalProperties":{"type":"string","nullable":true,"default":"d"}}`),
	spec(`{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`),
	spec(`{"type":"integer","allOf":[{"minimum":1}],"oneOf":[{"maximum":3},{"maximum":5}],"not":{"enum":[2]}}`),
	`{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string"}}},"status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`,
}

var fuzzValues = []string{
	`{"spec":{"x":3}}`, `{"spec":{"x":"abc"}}`, `{"spec":{"x":[{"name":"a"},{"name":"a"},{}]}}`,
	`{"spec":{"x":["a","a"]}}`, `{"spec":{"x":{"kind":"Pod","metadata":{"name":"a/b"}}}}`,
	`{"spec":{"x":{"a":null,"b":"c","d":1}}}`, `{"spec":{"x":null}}`, `{"apiVersion":"v1","status":{"a":[1,2.5]},"other":true}`,
	`[1,2]`, `null`, `"s"`,
}

// budget is how long one fuzz input may take: inputs are a few KiB, so
// anything near it is a complexity bug, not a slow machine.
const budget = 2 * time.Second

func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSchemas {
		for _, v := range fuzzValues {
			f.Add([]byte(s), []byte(v))
		}
	}
	f.Fuzz(func(t *testing.T, schemaJSON, valueJSON []byte) {
		s, err := schema.FromOpenAPIV3(schemaJSON)
		if err != nil {
			return
		}
		v, err := DecodeJSON(valueJSON)
		if err != nil {
			return
		}
		start := time.Now()
		Validate(s, v)
		if d := time.Since(start); d > budget {
			t.Fatalf("Validate took %v", d)
		}
	})
}

// FuzzValidateUpdate covers the ratcheting path: an update reports only
// errors a create of the same value reports, and all of them when nothing
// correlates (a null old value).
func FuzzValidateUpdate(f *testing.F) {
	for _, s := range fuzzSchemas {
		for i, v := range fuzzValues {
			f.Add([]byte(s), []byte(fuzzValues[(i+1)%len(fuzzValues)]), []byte(v))
			f.Add([]byte(s), []byte(v), []byte(v))
		}
	}
	f.Fuzz(func(t *testing.T, schemaJSON, oldJSON, valueJSON []byte) {
		s, err := schema.FromOpenAPIV3(schemaJSON)
		if err != nil {
			return
		}
		v, err := DecodeJSON(valueJSON)
		if err != nil {
			return
		}
		old, err := DecodeJSON(oldJSON)
		if err != nil {
			return
		}
		start := time.Now()
		create := messages(ValidateValues(s, v, nil))
		update := messages(ValidateValuesUpdate(s, v, old, nil))
		if d := time.Since(start); d > budget {
			t.Fatalf("ValidateValuesUpdate took %v", d)
		}
		all := map[string]bool{}
		for _, m := range create {
			all[m] = true
		}
		for _, m := range update {
			if !all[m] {
				t.Fatalf("update reports %q, which a create does not (%q)", m, create)
			}
		}
		// A null value is unchanged from a null old one, which ratchets.
		if none := messages(ValidateValuesUpdate(s, v, nil, nil)); v != nil && strings.Join(none, "\n") != strings.Join(create, "\n") {
			t.Fatalf("update from nothing reports %q, a create %q", none, create)
		}
	})
}

func FuzzPrune(f *testing.F) {
	for _, s := range fuzzSchemas {
		for _, v := range fuzzValues {
			f.Add([]byte(s), []byte(v), true)
		}
	}
	f.Fuzz(func(t *testing.T, schemaJSON, valueJSON []byte, root bool) {
		s, err := schema.FromOpenAPIV3(schemaJSON)
		if err != nil {
			return
		}
		v, err := DecodeJSON(valueJSON)
		if err != nil {
			return
		}
		start := time.Now()
		Prune(s, v, root)
		Default(s, v)
		// Pruning what was pruned and defaulted finds nothing more to
		// report: defaults are not pruned again, as kube-apiserver
		// checks them at CRD creation, so only inputs CheckStructural
		// accepts promise it.
		if raw, err := DecodeJSON(schemaJSON); err == nil {
			if m, ok := raw.(map[string]any); ok && len(CheckStructural(m, "")) == 0 {
				if again := Prune(s, v, root); len(again) > 0 {
					t.Fatalf("second Prune dropped %q", again)
				}
			}
		}
		if d := time.Since(start); d > budget {
			t.Fatalf("Prune and Default took %v", d)
		}
	})
}

func FuzzCheckStructural(f *testing.F) {
	for _, s := range fuzzSchemas {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"x","allOf":[{"type":"string","properties":{"metadata":{}}}]}}}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"object","default":{"b":1},"properties":{"b":{"type":"string"}}}}}`))
	f.Fuzz(func(t *testing.T, schemaJSON []byte) {
		raw, err := DecodeJSON(schemaJSON)
		if err != nil {
			return
		}
		m, ok := raw.(map[string]any)
		if !ok {
			return
		}
		start := time.Now()
		CheckStructural(m, "spec.versions[0].schema.openAPIV3Schema")
		if d := time.Since(start); d > budget {
			t.Fatalf("CheckStructural took %v", d)
		}
	})
}
