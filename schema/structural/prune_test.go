package structural

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestPrune(t *testing.T) {
	tests := []struct {
		name       string
		schema     string
		root       bool
		value      string
		want       string
		wantPruned []string
	}{
		{"unknown fields", `{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}`, true,
			`{"apiVersion":"x/v1","kind":"K","metadata":{"name":"n"},"spec":{"a":"x","b":1,"c":{"d":1}},"status":{}}`,
			`{"apiVersion":"x/v1","kind":"K","metadata":{"name":"n"},"spec":{"a":"x"}}`,
			[]string{"spec.b", "spec.c", "status"}},
		{"not a root: top-level apiVersion, kind, metadata go silently", `{"type":"object","properties":{"a":{"type":"string"}}}`, false,
			`{"apiVersion":"v1","kind":"K","metadata":{},"a":"x","b":{"kind":1}}`, `{"a":"x"}`, []string{"b"}},
		{"root meta fields are kept whatever their type", `{"type":"object"}`, true,
			`{"apiVersion":1,"kind":"K","metadata":"m"}`, `{"apiVersion":1,"kind":"K","metadata":"m"}`, nil},
		{"items", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"}}}}}}`, false,
			`{"l":[{"n":"a","x":1},{"y":2}]}`, `{"l":[{"n":"a"},{}]}`, []string{"l[0].x", "l[1].y"}},
		{"additionalProperties", `{"type":"object","additionalProperties":{"type":"object","properties":{"n":{"type":"string"}}}}`, false,
			`{"k":{"n":"a","x":1}}`, `{"k":{"n":"a"}}`, []string{"k.x"}},
		{"preserve-unknown-fields keeps the rest", `{"type":"object","properties":{"p":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"known":{"type":"object","properties":{"a":{"type":"string"}}}}}}}`, false,
			`{"p":{"free":{"deep":1},"known":{"a":"x","b":2}}}`, `{"p":{"free":{"deep":1},"known":{"a":"x"}}}`, []string{"p.known.b"}},
		{"embedded resource keeps its meta fields", `{"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object"}}}}}`, false,
			`{"t":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{},"other":1}}`,
			`{"t":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{}}}`, []string{"t.other"}},
		{"embedded metadata loses unknown fields", `{"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}`, false,
			`{"t":{"kind":"Pod","metadata":{"name":"x","labels":{"a":"b"},"bogus":1}}}`,
			`{"t":{"kind":"Pod","metadata":{"name":"x","labels":{"a":"b"}}}}`, []string{"t.metadata.bogus"}},
		{"the root's metadata is the registry's", `{"type":"object"}`, true,
			`{"metadata":{"name":"x","bogus":1}}`, `{"metadata":{"name":"x","bogus":1}}`, nil},
		{"non-nullable nulls without default go silently", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","nullable":true},"c":{"type":"string","default":"d"}}}`, false,
			`{"a":null,"b":null,"c":null}`, `{"b":null,"c":null}`, nil},
		{"additionalProperties true keeps keys and prunes their values", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":true}}}`, false,
			`{"m":{"x":{"y":1},"z":1}}`, `{"m":{"x":{},"z":1}}`, []string{"m.x.y"}},
		{"nothing to prune", `{"type":"object","properties":{"a":{"type":"string"}}}`, false, `{"a":"x"}`, `{"a":"x"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustDecode(t, tt.value)
			pruned := Prune(mustSchema(t, tt.schema), v, tt.root)
			if !reflect.DeepEqual(v, mustDecode(t, tt.want)) {
				got, _ := json.Marshal(v)
				t.Errorf("pruned value = %s, want %s", got, tt.want)
			}
			if !reflect.DeepEqual(pruned, tt.wantPruned) {
				t.Errorf("pruned paths = %q, want %q", pruned, tt.wantPruned)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		value  string
		want   string
	}{
		{"missing property", `{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer","default":1}}}}}`,
			`{"spec":{}}`, `{"spec":{"replicas":1}}`},
		{"present property is kept", `{"type":"object","properties":{"r":{"type":"integer","default":1}}}`, `{"r":5}`, `{"r":5}`},
		{"missing parent is not created", `{"type":"object","properties":{"spec":{"type":"object","properties":{"r":{"type":"integer","default":1}}}}}`,
			`{}`, `{}`},
		{"defaulted parent is defaulted within", `{"type":"object","properties":{"spec":{"type":"object","default":{},"properties":{"r":{"type":"integer","default":1}}}}}`,
			`{}`, `{"spec":{"r":1}}`},
		{"null non-nullable takes the default", `{"type":"object","properties":{"r":{"type":"string","default":"d"}}}`, `{"r":null}`, `{"r":"d"}`},
		{"null nullable stays null", `{"type":"object","properties":{"r":{"type":"string","nullable":true,"default":"d"}}}`, `{"r":null}`, `{"r":null}`},
		{"items", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"p":{"type":"string","default":"TCP"}}}}}}`,
			`{"l":[{},{"p":"UDP"}]}`, `{"l":[{"p":"TCP"},{"p":"UDP"}]}`},
		{"null item", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","default":"x"}}}}`, `{"l":[null,"y"]}`, `{"l":["x","y"]}`},
		{"additionalProperties", `{"type":"object","additionalProperties":{"type":"object","properties":{"p":{"type":"integer","default":80}}}}`,
			`{"a":{},"b":{"p":1}}`, `{"a":{"p":80},"b":{"p":1}}`},
		{"default object is copied", `{"type":"object","properties":{"a":{"type":"object","default":{"k":[1]}},"b":{"type":"object","default":{"k":[1]}}}}`,
			`{}`, `{"a":{"k":[1]},"b":{"k":[1]}}`},
		{"fractional default stays a float", `{"type":"object","properties":{"r":{"type":"number","default":0.5}}}`, `{}`, `{"r":0.5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, tt.schema)
			v := mustDecode(t, tt.value)
			Default(s, v)
			if !reflect.DeepEqual(v, mustDecode(t, tt.want)) {
				got, _ := json.Marshal(v)
				t.Errorf("defaulted = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDefaultDoesNotShareTheSchemaDefault checks a defaulted value can be
// changed without changing the schema's default (or a second object's).
func TestDefaultDoesNotShareTheSchemaDefault(t *testing.T) {
	s := mustSchema(t, `{"type":"object","properties":{"a":{"type":"object","default":{"k":"v"}}}}`)
	first := mustDecode(t, `{}`).(map[string]any)
	Default(s, first)
	first["a"].(map[string]any)["k"] = "changed"
	second := mustDecode(t, `{}`)
	Default(s, second)
	if !reflect.DeepEqual(second, mustDecode(t, `{"a":{"k":"v"}}`)) {
		t.Fatalf("second object defaulted to %v", second)
	}
}
