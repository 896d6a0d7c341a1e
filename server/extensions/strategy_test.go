package extensions

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
)

// widgetVersion is the version e2e's Widget CRD serves: a CEL rule on
// spec, a status subresource and a scale subresource.
func widgetVersion(t testing.TB) *crStrategy {
	t.Helper()
	crd := &CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
      "spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.color != 'black'","message":"black is not a color"}],
        "properties":{"color":{"type":"string","default":"blue"},"replicas":{"type":"integer","minimum":0,"maximum":10},
          "tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}}},
      "status":{"type":"object","properties":{"replicas":{"type":"integer"},"selector":{"type":"string"},
        "last":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}}}},
    "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}}}]}}`), crd); err != nil {
		t.Fatal(err)
	}
	c, _, err := versionStrategy(crd, &crd.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func decodeObject(t *testing.T, body string) *Object {
	t.Helper()
	var o Object
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		t.Fatal(err)
	}
	return &o
}

// TestCustomResourceStrategyValidate checks what a write of a custom
// resource reports, against kube-apiserver v1.37's answers to the same
// objects (e2e's TestKubeDiff): the schema's errors, then the scale
// paths' accessor errors, then either the CEL rules' failures (the
// schema's errors do not block them) or the note that they were not
// checked.
func TestCustomResourceStrategyValidate(t *testing.T) {
	const notChecked = `<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`
	c := widgetVersion(t)
	for _, tc := range []struct {
		name string
		// old is set for an update; status says it is a write to
		// /status.
		obj, old string
		status   bool
		want     []string
	}{
		{name: "valid", obj: `{"spec":{"color":"blue","replicas":2}}`},
		{name: "schema violation and rule", obj: `{"spec":{"color":"black","replicas":11}}`, want: []string{
			`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`,
			`spec: Invalid value: black is not a color`,
		}},
		{name: "rule alone", obj: `{"spec":{"color":"black","replicas":1}}`, want: []string{
			`spec: Invalid value: black is not a color`,
		}},
		{name: "wrong type", obj: `{"spec":{"color":"black","replicas":"two"}}`, want: []string{
			`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
			`.spec.replicas: Invalid value: 0: .spec.replicas accessor error: two is of the type string, expected int64`,
			notChecked,
		}},
		{name: "negative replicas", obj: `{"spec":{"color":"blue","replicas":-1}}`, want: []string{
			`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
			`.spec.replicas: Invalid value: -1: should be a non-negative integer`,
		}},
		{name: "replicas not a whole number", obj: `{"spec":{"color":"blue","replicas":1.5}}`, want: []string{
			`spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number"`,
			`<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.replicas`,
			`.spec.replicas: Invalid value: 0: .spec.replicas accessor error: 1.5 is of the type float64, expected int64`,
			notChecked,
		}},
		{name: "spec not an object", obj: `{"spec":"big"}`, want: []string{
			`spec: Invalid value: "string": spec in body must be of type object: "string"`,
			`.spec.replicas: Invalid value: 0: .spec.replicas accessor error: big is of the type string, expected map[string]interface{}`,
			notChecked,
		}},
		{name: "bad selector", obj: `{"spec":{"color":"blue"},"status":{"selector":3}}`, want: []string{
			`status.selector: Invalid value: "integer": status.selector in body must be of type string: "integer"`,
			`.status.selector: Invalid value: "": .status.selector accessor error: 3 is of the type int64, expected string`,
			notChecked,
		}},
		{name: "status of the wrong type", status: true, old: `{"spec":{"color":"blue","replicas":2}}`,
			obj: `{"spec":{"color":"blue","replicas":2},"status":{"replicas":"x"}}`, want: []string{
				`status.replicas: Invalid value: "string": replicas in body must be of type integer: "string"`,
				`.status.replicas: Invalid value: 0: .status.replicas accessor error: x is of the type string, expected int64`,
				notChecked,
			}},
		// A write to /status validates the status by its schema, not
		// the spec.
		{name: "status leaves the spec unchecked", status: true, old: `{"spec":{"color":"blue","replicas":11}}`,
			obj: `{"spec":{"color":"blue","replicas":11},"status":{"replicas":3}}`},
		// Embedded resources are checked on writes of the object, not
		// of its status.
		{name: "embedded resource", obj: `{"spec":{"color":"blue"},"status":{"last":{"apiVersion":"v1"}}}`, want: []string{
			`status.last.kind: Required value`,
			notChecked,
		}},
		{name: "status with an embedded resource", status: true, old: `{"spec":{"color":"blue"}}`,
			obj: `{"spec":{"color":"blue"},"status":{"last":{"apiVersion":"v1"}}}`},
		// Duplicates in a set are reported unless the old object had
		// them (kube-apiserver ratchets list types).
		{name: "duplicate in a set", obj: `{"spec":{"color":"blue","tags":["a","a"]}}`, want: []string{
			`spec.tags[1]: Duplicate value: "a"`,
		}},
		{name: "duplicate added", old: `{"spec":{"color":"blue","tags":["a"]}}`, obj: `{"spec":{"color":"blue","tags":["a","a"]}}`, want: []string{
			`spec.tags[1]: Duplicate value: "a"`,
		}},
		{name: "duplicate kept", old: `{"spec":{"color":"blue","tags":["b","b"]}}`, obj: `{"spec":{"color":"blue","tags":["b","b","a"]}}`},
		// The schema's errors at values an update left unchanged are
		// dropped (kube's CRDValidationRatcheting); the scale paths'
		// checks do not ratchet.
		{name: "invalid value kept", old: `{"spec":{"color":"blue","replicas":11}}`, obj: `{"spec":{"color":"red","replicas":11}}`},
		{name: "invalid value changed", old: `{"spec":{"color":"blue","replicas":11}}`, obj: `{"spec":{"color":"blue","replicas":12}}`, want: []string{
			`spec.replicas: Invalid value: 12: spec.replicas in body should be less than or equal to 10`,
		}},
		{name: "wrong type kept, scale path still checked", old: `{"spec":{"color":"blue","replicas":"two"}}`, obj: `{"spec":{"color":"red","replicas":"two"}}`, want: []string{
			`.spec.replicas: Invalid value: 0: .spec.replicas accessor error: two is of the type string, expected int64`,
		}},
		{name: "status: wrong type kept", status: true, old: `{"spec":{"color":"blue"},"status":{"selector":3,"replicas":1}}`,
			obj: `{"spec":{"color":"blue"},"status":{"selector":3,"replicas":2}}`, want: []string{
				`.status.selector: Invalid value: "": .status.selector accessor error: 3 is of the type int64, expected string`,
			}},
		{name: "status: wrong type changed", status: true, old: `{"spec":{"color":"blue"},"status":{"selector":3}}`,
			obj: `{"spec":{"color":"blue"},"status":{"selector":4}}`, want: []string{
				`status.selector: Invalid value: "integer": selector in body must be of type string: "integer"`,
				`.status.selector: Invalid value: "": .status.selector accessor error: 4 is of the type int64, expected string`,
				notChecked,
			}},
		{name: "duplicate kept through status", status: true, old: `{"spec":{"color":"blue","tags":["b","b"]}}`,
			obj: `{"spec":{"color":"blue","tags":["b","b"]},"status":{"replicas":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := decodeObject(t, tc.obj)
			var errs []string
			var got []*meta.FieldError
			switch {
			case tc.old == "":
				got = c.Validate(t.Context(), o)
			case tc.status:
				got = c.ValidateStatusUpdate(t.Context(), o, decodeObject(t, tc.old))
			default:
				got = c.ValidateUpdate(t.Context(), o, decodeObject(t, tc.old))
			}
			for _, e := range got {
				errs = append(errs, e.Error())
			}
			if !slices.Equal(errs, tc.want) {
				t.Errorf("errors:\n%q\nwant:\n%q", errs, tc.want)
			}
		})
	}
}

// BenchmarkValidateValidWidget is the validation of a valid write, which
// the CEL rules and the scale paths' checks must keep cheap.
func BenchmarkValidateValidWidget(b *testing.B) {
	c := widgetVersion(b)
	var o Object
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"w1"},"spec":{"color":"blue","replicas":2},"status":{"replicas":2,"selector":"app=w"}}`), &o); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if errs := c.Validate(b.Context(), &o); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// TestCustomResourceRulesSeeTheObject checks that the CEL rules see the
// whole object, as kube-apiserver's: a rule at the root reads
// metadata.name, and on an update a root rule's failure is never
// ratcheted (metadata holds fields no schema declares, so kube never
// finds the root unchanged), while a rule's failure at an unchanged
// value below is.
func TestCustomResourceRulesSeeTheObject(t *testing.T) {
	crd := &CustomResourceDefinition{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,
    "schema":{"openAPIV3Schema":{"type":"object",
      "x-kubernetes-validations":[{"rule":"self.metadata.name.startsWith('x')","message":"x names only"},{"rule":"self.spec.a < 10"}],
      "properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","maxLength":8}}},
        "spec":{"type":"object","properties":{"a":{"type":"integer"},
          "s":{"type":"object","properties":{"b":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.b < 10"}]}}}}}}}]}}`), crd); err != nil {
		t.Fatal(err)
	}
	c, _, err := versionStrategy(crd, &crd.Spec.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	const stored = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x1","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"a":20,"s":{"b":20}}}`
	for _, tc := range []struct {
		name     string
		obj, old string
		want     []string
		// warnings are the ratcheted failures, sent as kube sends them.
		warnings []string
	}{
		{name: "create", obj: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"y1"},"spec":{"a":20,"s":{"b":20}}}`, want: []string{
			`<nil>: Invalid value: x names only`,
			`<nil>: Invalid value: failed rule: self.spec.a < 10`,
			`spec.s: Invalid value: failed rule: self.b < 10`,
		}},
		{name: "label added", old: stored,
			obj:      `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x1","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"a":"b"}},"spec":{"a":20,"s":{"b":20}}}`,
			want:     []string{`<nil>: Invalid value: failed rule: self.spec.a < 10`},
			warnings: []string{`spec.s: Invalid value: failed rule: self.b < 10`}},
		{name: "nothing changed", old: stored, obj: stored,
			want:     []string{`<nil>: Invalid value: failed rule: self.spec.a < 10`},
			warnings: []string{`spec.s: Invalid value: failed rule: self.b < 10`}},
		{name: "spec.s changed", old: stored,
			obj:  `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x1","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"a":20,"s":{"b":21}}}`,
			want: []string{`<nil>: Invalid value: failed rule: self.spec.a < 10`, `spec.s: Invalid value: failed rule: self.b < 10`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings []string
			ctx := admission.WithWarnings(context.Background(), func(msg string) { warnings = append(warnings, msg) })
			var errs meta.FieldErrors
			if tc.old == "" {
				errs = c.Validate(ctx, decodeObject(t, tc.obj))
			} else {
				errs = c.ValidateUpdate(ctx, decodeObject(t, tc.obj), decodeObject(t, tc.old))
			}
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(tc.warnings, "\n"))
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
