package structural

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// xy is the schema of a spec with the property x, whose schema is given,
// and a string y: changing y changes spec but not x.
func xy(x string) string {
	return `{"type":"object","properties":{"spec":{"type":"object","properties":{"x":` + x + `,"y":{"type":"string"}}}}}`
}

// TestValidateValuesUpdate checks kube-apiserver's validation ratcheting
// (CRDValidationRatcheting): an error at a value the update did not
// change is dropped, one at a changed value stays, and values correlate
// as kube's CorrelatedObject correlates them. Every new value here is
// invalid, so a create of it fails (checked too).
func TestValidateValuesUpdate(t *testing.T) {
	mapList := xy(`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"name":{"type":"string"},"v":{"type":"integer","maximum":5}}}}`)
	tests := []struct {
		name, schema, old, new string
		want                   []string
	}{
		{"maximum unchanged", xy(`{"type":"integer","maximum":10}`), `{"spec":{"x":11,"y":"a"}}`, `{"spec":{"x":11,"y":"b"}}`, nil},
		{"maximum changed", xy(`{"type":"integer","maximum":10}`), `{"spec":{"x":11,"y":"a"}}`, `{"spec":{"x":12,"y":"a"}}`,
			[]string{`spec.x: Invalid value: 12: spec.x in body should be less than or equal to 10`}},
		{"maximum, a number is not its integer", xy(`{"type":"number","maximum":10}`), `{"spec":{"x":11}}`, `{"spec":{"x":11.0}}`,
			[]string{`spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10`}},
		{"minimum unchanged", xy(`{"type":"integer","minimum":1}`), `{"spec":{"x":0}}`, `{"spec":{"x":0,"y":"b"}}`, nil},
		{"multipleOf unchanged", xy(`{"type":"integer","multipleOf":3}`), `{"spec":{"x":7}}`, `{"spec":{"x":7,"y":"b"}}`, nil},
		{"multipleOf changed", xy(`{"type":"integer","multipleOf":3}`), `{"spec":{"x":7}}`, `{"spec":{"x":8}}`,
			[]string{`spec.x: Invalid value: 8: spec.x in body should be a multiple of 3`}},
		{"maxLength unchanged", xy(`{"type":"string","maxLength":2}`), `{"spec":{"x":"abc"}}`, `{"spec":{"x":"abc","y":"b"}}`, nil},
		{"maxLength changed", xy(`{"type":"string","maxLength":2}`), `{"spec":{"x":"abc"}}`, `{"spec":{"x":"abcd"}}`,
			[]string{`spec.x: Too long: may not be more than 2 bytes`}},
		{"minLength unchanged", xy(`{"type":"string","minLength":2}`), `{"spec":{"x":"a"}}`, `{"spec":{"x":"a","y":"b"}}`, nil},
		{"pattern unchanged", xy(`{"type":"string","pattern":"^[a-z]+$"}`), `{"spec":{"x":"A"}}`, `{"spec":{"x":"A","y":"b"}}`, nil},
		{"pattern changed", xy(`{"type":"string","pattern":"^[a-z]+$"}`), `{"spec":{"x":"A"}}`, `{"spec":{"x":"B"}}`,
			[]string{`spec.x: Invalid value: "B": spec.x in body should match '^[a-z]+$'`}},
		{"format unchanged", xy(`{"type":"string","format":"uuid"}`), `{"spec":{"x":"nope"}}`, `{"spec":{"x":"nope","y":"b"}}`, nil},
		{"enum unchanged", xy(`{"type":"string","enum":["a","b"]}`), `{"spec":{"x":"c"}}`, `{"spec":{"x":"c","y":"b"}}`, nil},
		{"enum changed", xy(`{"type":"string","enum":["a","b"]}`), `{"spec":{"x":"c"}}`, `{"spec":{"x":"d"}}`,
			[]string{`spec.x: Unsupported value: "d": supported values: "a", "b"`}},
		{"type unchanged", xy(`{"type":"integer"}`), `{"spec":{"x":"1"}}`, `{"spec":{"x":"1","y":"b"}}`, nil},
		{"null unchanged", xy(`{"type":"integer"}`), `{"spec":{"x":null}}`, `{"spec":{"x":null,"y":"b"}}`, nil},
		{"minItems unchanged", xy(`{"type":"array","minItems":2,"items":{"type":"string"}}`), `{"spec":{"x":["a"]}}`, `{"spec":{"x":["a"],"y":"b"}}`, nil},
		{"maxItems changed", xy(`{"type":"array","maxItems":1,"items":{"type":"string"}}`), `{"spec":{"x":["a","b"]}}`, `{"spec":{"x":["a","c"]}}`,
			[]string{`spec.x: Too many: 2: must have at most 1 item`}},
		{"uniqueItems unchanged", xy(`{"type":"array","uniqueItems":true,"items":{"type":"string"}}`), `{"spec":{"x":["a","a"]}}`, `{"spec":{"x":["a","a"],"y":"b"}}`, nil},
		{"required unchanged", xy(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`),
			`{"spec":{"x":{"b":"1"}}}`, `{"spec":{"x":{"b":"1"},"y":"b"}}`, nil},
		{"required: a sibling's change does not unlock it", xy(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`),
			`{"spec":{"x":{"b":"1"}}}`, `{"spec":{"x":{"b":"2"}}}`,
			[]string{`spec.x.a: Required value`}},
		{"maxProperties: a changed entry does not unlock it", xy(`{"type":"object","maxProperties":1,"additionalProperties":{"type":"string","maxLength":1}}`),
			`{"spec":{"x":{"a":"1","b":"22"}}}`, `{"spec":{"x":{"a":"2","b":"22"}}}`,
			[]string{`spec.x: Too many: 2: must have at most 1 item`}},
		{"additionalProperties correlate by key", xy(`{"type":"object","additionalProperties":{"type":"string","maxLength":1}}`),
			`{"spec":{"x":{"a":"11","b":"22"}}}`, `{"spec":{"x":{"a":"11","b":"2","c":"33"}}}`,
			[]string{`spec.x.c: Too long: may not be more than 1 byte`}},
		{"minProperties unchanged", xy(`{"type":"object","minProperties":2,"additionalProperties":{"type":"string"}}`),
			`{"spec":{"x":{"a":"1"}}}`, `{"spec":{"x":{"a":"1"},"y":"b"}}`, nil},
		{"an unknown field makes its object changed, as kube's correlation", xy(`{"type":"object","maxProperties":1,"x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string","maxLength":1}}}`),
			`{"spec":{"x":{"a":"11","z":1}}}`, `{"spec":{"x":{"a":"11","z":1},"y":"b"}}`,
			[]string{`spec.x: Too many: 2: must have at most 1 item`}},
		{"map list items correlate by key, not index", mapList,
			`{"spec":{"x":[{"name":"a","v":9},{"name":"b","v":1}]}}`, `{"spec":{"x":[{"name":"b","v":1},{"name":"a","v":9}]}}`, nil},
		{"map list: a new item is checked", mapList,
			`{"spec":{"x":[{"name":"a","v":9}]}}`, `{"spec":{"x":[{"name":"a","v":9},{"name":"c","v":9}]}}`,
			[]string{`spec.x[1].v: Invalid value: 9: spec.x[1].v in body should be less than or equal to 5`}},
		{"map list: a changed key is a new item", mapList,
			`{"spec":{"x":[{"name":"a","v":9}]}}`, `{"spec":{"x":[{"name":"b","v":9}]}}`,
			[]string{`spec.x[0].v: Invalid value: 9: spec.x[0].v in body should be less than or equal to 5`}},
		{"plain list items do not correlate", xy(`{"type":"array","items":{"type":"integer","maximum":5}}`),
			`{"spec":{"x":[9,1]}}`, `{"spec":{"x":[9,2]}}`,
			[]string{`spec.x[0]: Invalid value: 9: spec.x[0] in body should be less than or equal to 5`}},
		{"a plain list unchanged as a whole", xy(`{"type":"array","items":{"type":"integer","maximum":5}}`),
			`{"spec":{"x":[9,1]}}`, `{"spec":{"x":[9,1],"y":"b"}}`, nil},
		{"set list items do not correlate", xy(`{"type":"array","x-kubernetes-list-type":"set","items":{"type":"integer","maximum":5}}`),
			`{"spec":{"x":[9,1]}}`, `{"spec":{"x":[9,2]}}`,
			[]string{`spec.x[0]: Invalid value: 9: spec.x[0] in body should be less than or equal to 5`}},
		{"anyOf unchanged", xy(`{"type":"integer","anyOf":[{"maximum":3},{"minimum":10}]}`), `{"spec":{"x":5}}`, `{"spec":{"x":5,"y":"b"}}`, nil},
		{"the root's kind is not correlated", `{"type":"object","properties":{"kind":{"type":"string","enum":["A"]},"spec":{"type":"object"}}}`,
			`{"kind":"B","spec":{}}`, `{"kind":"B","spec":{"a":1}}`,
			[]string{`kind: Unsupported value: "B": supported values: "A"`}},
		{"a field new in the update is checked", xy(`{"type":"integer","maximum":10}`), `{"spec":{"y":"a"}}`, `{"spec":{"x":11,"y":"a"}}`,
			[]string{`spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, tt.schema)
			value := mustDecode(t, tt.new)
			if len(ValidateValues(s, value, nil)) == 0 {
				t.Fatalf("ValidateValues(%s) found nothing: a create of it must fail", tt.new)
			}
			got := messages(ValidateValuesUpdate(s, value, mustDecode(t, tt.old), nil))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("ValidateValuesUpdate:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}

// TestValidateValuesUpdateUnderBase checks a /status write: the status
// correlates with the old status.
func TestValidateValuesUpdateUnderBase(t *testing.T) {
	s := mustSchema(t, `{"type":"object","properties":{"replicas":{"type":"integer","maximum":3},"phase":{"type":"string"}}}`)
	value := mustDecode(t, `{"replicas":5,"phase":"b"}`)
	if errs := ValidateValuesUpdate(s, value, mustDecode(t, `{"replicas":5,"phase":"a"}`), meta.NewPath("status")); len(errs) != 0 {
		t.Errorf("unchanged replicas: %v", errs)
	}
	got := messages(ValidateValuesUpdate(s, value, mustDecode(t, `{"replicas":4}`), meta.NewPath("status")))
	want := `status.replicas: Invalid value: 5: replicas in body should be less than or equal to 3`
	if strings.Join(got, "\n") != want {
		t.Errorf("changed replicas: %q, want %q", got, want)
	}
	got = messages(ValidateValuesUpdate(s, value, nil, meta.NewPath("status")))
	if strings.Join(got, "\n") != want {
		t.Errorf("no old status: %q, want %q", got, want)
	}
}

func messages(errs meta.FieldErrors) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestMapListItems pins how an item of a map list finds its old item, as
// kube-apiserver's MapList (ratcheting, and CEL's oldSelf) finds it.
func TestMapListItems(t *testing.T) {
	one := &schema.Schema{Type: "array", ListType: schema.ListMap, ListMapKeys: []string{"k"}, Items: &schema.Schema{Type: "object"}}
	two := &schema.Schema{Type: "array", ListType: schema.ListMap, ListMapKeys: []string{"k", "j"}, Items: &schema.Schema{Type: "object"}}
	set := &schema.Schema{Type: "array", ListType: schema.ListSet, Items: &schema.Schema{Type: "object"}}
	item := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name string
		s    *schema.Schema
		old  []any
		item any
		want any // nil: no old item
	}{
		{name: "by key", s: one, old: []any{item("k", "a", "v", int64(1)), item("k", "b")}, item: item("k", "a"), want: item("k", "a", "v", int64(1))},
		{name: "the first of duplicates", s: one, old: []any{item("k", "a", "v", int64(1)), item("k", "a", "v", int64(2))}, item: item("k", "a"), want: item("k", "a", "v", int64(1))},
		{name: "a missing key pairs nothing", s: one, old: []any{item("v", int64(1))}, item: item("v", int64(1))},
		{name: "a null key pairs nothing", s: one, old: []any{item("k", nil)}, item: item("k", nil)},
		{name: "a non-scalar key pairs nothing", s: one, old: []any{item("k", []any{"a"})}, item: item("k", []any{"a"})},
		{name: "an int is not a float", s: one, old: []any{item("k", float64(1))}, item: item("k", int64(1))},
		{name: "one float key compares exactly", s: one, old: []any{item("k", 1.0000001)}, item: item("k", 1.0000002)},
		{name: "several keys compare floats to six decimals", s: two, old: []any{item("k", 1.0000001, "j", "x")}, item: item("k", 1.0000002, "j", "x"), want: item("k", 1.0000001, "j", "x")},
		{name: "a set pairs nothing", s: set, old: []any{item("k", "a")}, item: item("k", "a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NewMapListItems(tc.s, tc.old).Old(tc.item)
			if ok != (tc.want != nil) || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Old = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}
