package cel

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

func compileJSON(t *testing.T, js string) *Validator {
	t.Helper()
	s, err := schema.FromOpenAPIV3([]byte(js))
	if err != nil {
		t.Fatalf("FromOpenAPIV3: %v", err)
	}
	return compile(t, s)
}

func decodeJSON(t testing.TB, js string) any {
	t.Helper()
	if js == "" {
		return nil
	}
	v, err := structural.DecodeJSON([]byte(js))
	if err != nil {
		t.Fatalf("decoding %s: %v", js, err)
	}
	return v
}

// TestRatcheting pins which failed rules an update ratchets (reports as
// warnings) as kube-apiserver 1.37's CRDValidationRatcheting does: a value
// is paired with an old one through object fields and map keys (every map
// type), map lists' keys, never through other lists' items; an unpaired
// value ratchets when its nearest paired ancestor is unchanged; equality
// is kube's (undeclared fields differ, int64 is not float64). e2e/celdiff
// TestRatchetingMatchesKube holds the same cases to kube's own code.
func TestRatcheting(t *testing.T) {
	const item = `{"type":"object","properties":{"k":{"type":"string","maxLength":8},"v":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.v < 10"}]}`
	list := func(listType string) string {
		return `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"l":{"type":"array","maxItems":8,` + listType + `"items":` + item + `},"n":{"type":"integer"}}}}}`
	}
	const mapList = `"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],`
	atomicMap := `{"type":"object","properties":{"spec":{"type":"object","properties":{
		"m":{"type":"object","x-kubernetes-map-type":"atomic","properties":{
			"a":{"type":"integer","x-kubernetes-validations":[{"rule":"self < 10"}]},
			"b":{"type":"integer","x-kubernetes-validations":[{"rule":"self >= oldSelf","message":"b may not shrink"}]},
			"c":{"type":"integer"}}}}}}}`
	rootRule := func(extra string) string {
		return `{"type":"object","x-kubernetes-validations":[{"rule":"self.spec.a < 10"}],` + extra + `"properties":{
			"spec":{"type":"object","properties":{"a":{"type":"integer"}}}}}`
	}
	const l2 = `{"spec":{"n":2,"l":[{"k":"a","v":20},{"k":"b","v":1}]}}`
	const l1 = `{"spec":{"n":1,"l":[{"k":"a","v":20},{"k":"b","v":1}]}}`
	const failed0 = `spec.l[0]: Invalid value: failed rule: self.v < 10`
	tests := []struct {
		name           string
		schema         string
		obj, old       string
		errs, warnings []string
	}{
		{name: "create ratchets nothing", schema: list(mapList), obj: l2, errs: []string{failed0}},
		{name: "map list item unchanged", schema: list(mapList), obj: l2, old: l1, warnings: []string{failed0}},
		{name: "map list reordered", schema: list(mapList),
			obj: `{"spec":{"l":[{"k":"b","v":1},{"k":"a","v":20}]}}`, old: `{"spec":{"l":[{"k":"a","v":20},{"k":"b","v":1}]}}`,
			warnings: []string{`spec.l[1]: Invalid value: failed rule: self.v < 10`}},
		{name: "map list item changed", schema: list(mapList),
			obj: `{"spec":{"l":[{"k":"a","v":21}]}}`, old: `{"spec":{"l":[{"k":"a","v":20}]}}`, errs: []string{failed0}},
		{name: "map list items without their key are not paired", schema: list(mapList),
			obj: `{"spec":{"l":[{"v":20}]}}`, old: `{"spec":{"l":[{"v":20}]}}`, errs: []string{failed0}},
		{name: "map list: the first old item with the key is paired", schema: list(mapList),
			obj: `{"spec":{"l":[{"k":"a","v":20},{"k":"a","v":30}]}}`, old: `{"spec":{"l":[{"k":"a","v":20},{"k":"a","v":30}]}}`,
			errs: []string{`spec.l[1]: Invalid value: failed rule: self.v < 10`}, warnings: []string{failed0}},
		{name: "items of an unchanged set", schema: list(`"x-kubernetes-list-type":"set",`), obj: l2, old: l1, warnings: []string{failed0}},
		{name: "items of an unchanged atomic list", schema: list(`"x-kubernetes-list-type":"atomic",`), obj: l2, old: l1, warnings: []string{failed0}},
		{name: "items of an unchanged list without a list type", schema: list(""), obj: l2, old: l1, warnings: []string{failed0}},
		{name: "items of a changed set", schema: list(`"x-kubernetes-list-type":"set",`),
			obj: `{"spec":{"l":[{"k":"a","v":20},{"k":"c","v":1}]}}`, old: `{"spec":{"l":[{"k":"a","v":20}]}}`, errs: []string{failed0}},
		{name: "atomic map: keys paired, oldSelf bound", schema: atomicMap,
			obj: `{"spec":{"m":{"a":20,"b":1,"c":2}}}`, old: `{"spec":{"m":{"a":20,"b":2,"c":1}}}`,
			errs: []string{`spec.m.b: Invalid value: 1: b may not shrink`}, warnings: []string{`spec.m.a: Invalid value: 20: failed rule: self < 10`}},
		{name: "fields the schema does not declare count as changed",
			schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,
				"properties":{"a":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.a < 10"}]}}}`,
			obj: `{"spec":{"a":20,"x":1}}`, old: `{"spec":{"a":20,"x":1}}`, errs: []string{`spec: Invalid value: failed rule: self.a < 10`}},
		{name: "root unchanged", schema: rootRule(""), obj: `{"spec":{"a":20}}`, old: `{"spec":{"a":20}}`,
			warnings: []string{`<nil>: Invalid value: failed rule: self.spec.a < 10`}},
		{name: "root with a field its schema does not declare", schema: rootRule(""),
			obj: `{"metadata":{"name":"x"},"spec":{"a":20}}`, old: `{"metadata":{"name":"x"},"spec":{"a":20}}`,
			errs: []string{`<nil>: Invalid value: failed rule: self.spec.a < 10`}},
		{name: "the root's apiVersion and kind never ratchet", schema: `{"type":"object","properties":{
			"apiVersion":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'example.com/v2'"}]},
			"spec":{"type":"object","properties":{"kind":{"type":"string","x-kubernetes-validations":[{"rule":"self == 'Other'"}]}}}}}`,
			obj: `{"apiVersion":"example.com/v1","spec":{"kind":"Widget"}}`, old: `{"apiVersion":"example.com/v1","spec":{"kind":"Widget"}}`,
			errs:     []string{`apiVersion: Invalid value: "example.com/v1": failed rule: self == 'example.com/v2'`},
			warnings: []string{`spec.kind: Invalid value: "Widget": failed rule: self == 'Other'`}},
		{name: "allOf ratchets with the parent", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"s":{"type":"object","properties":{"a":{"type":"integer","allOf":[{"x-kubernetes-validations":[{"rule":"self < 10","message":"allOf"}]}]}}},
			"n":{"type":"integer"}}}}}`,
			obj: `{"spec":{"s":{"a":20},"n":2}}`, old: `{"spec":{"s":{"a":20},"n":1}}`, warnings: []string{`spec.s.a: Invalid value: 20: allOf`}},
		{name: "allOf under a changed parent", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"a":{"type":"integer","allOf":[{"x-kubernetes-validations":[{"rule":"self < 10","message":"allOf"}]}],"x-kubernetes-validations":[{"rule":"self < 5"}]},
			"n":{"type":"integer"}}}}}`,
			obj: `{"spec":{"a":20,"n":2}}`, old: `{"spec":{"a":20,"n":1}}`,
			errs: []string{`spec.a: Invalid value: 20: allOf`}, warnings: []string{`spec.a: Invalid value: 20: failed rule: self < 5`}},
		{name: "transition rules never ratchet", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"a":{"type":"integer","x-kubernetes-validations":[{"rule":"self > oldSelf","message":"must grow"}]}}}}}`,
			obj: `{"spec":{"a":1}}`, old: `{"spec":{"a":1}}`, errs: []string{`spec.a: Invalid value: 1: must grow`}},
		{name: "evaluation errors never ratchet", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"s":{"type":"object","properties":{"a":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.a > 0"}]}}}}}`,
			obj: `{"spec":{"s":{}}}`, old: `{"spec":{"s":{}}}`, errs: []string{`spec.s: Invalid value: "object": no such key: a evaluating rule: self.a > 0`}},
		{name: "an integer is not the float of the same number", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"r":{"type":"number","x-kubernetes-validations":[{"rule":"self < 0.5"}]}}}}}`,
			obj: `{"spec":{"r":1.0}}`, old: `{"spec":{"r":1}}`, errs: []string{`spec.r: Invalid value: 1: failed rule: self < 0.5`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := compileJSON(t, tc.schema)
			res := v.Validate(context.Background(), nil, decodeJSON(t, tc.obj), decodeJSON(t, tc.old))
			got := messages(res.Errors)
			slices.Sort(got)
			if strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.errs, "\n"))
			}
			warnings := slices.Sorted(slices.Values(res.Warnings))
			if strings.Join(warnings, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(tc.warnings, "\n"))
			}
		})
	}
}

// TestReadsObjectMeta pins when a Validator needs the root's apiVersion,
// kind and metadata: rules at the root or on those fields.
func TestReadsObjectMeta(t *testing.T) {
	const spec = `"spec":{"type":"object","properties":{"a":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.a > 0"}]}`
	tests := []struct {
		name, schema string
		want         bool
	}{
		{name: "rules below the root only", schema: `{"type":"object","properties":{` + spec + `}}`},
		{name: "a rule at the root", schema: `{"type":"object","x-kubernetes-validations":[{"rule":"has(self.spec)"}],"properties":{` + spec + `}}`, want: true},
		{name: "a rule on apiVersion", schema: `{"type":"object","properties":{"apiVersion":{"type":"string","x-kubernetes-validations":[{"rule":"self != ''"}]},` + spec + `}}`, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compileJSON(t, tc.schema).ReadsObjectMeta(); got != tc.want {
				t.Fatalf("ReadsObjectMeta() = %v, want %v", got, tc.want)
			}
		})
	}
	if (*Validator)(nil).ReadsObjectMeta() {
		t.Fatal("a nil Validator reads nothing")
	}
}
