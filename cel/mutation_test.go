package cel_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/cel"
)

func mutationEval(t *testing.T, expr string) ref.Val {
	t.Helper()
	c, err := cel.NewMutationCompiler(cel.AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Compile(expr, nil)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	obj := map[string]any{"metadata": map[string]any{"name": "w1", "labels": map[string]any{"a": "b"}}}
	v, _, err := e.Eval(context.Background(), map[string]any{cel.ObjectVarName: obj}, cel.RuntimeCELCostBudget)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// TestApplyConfigurationValues: Object{...} values become the JSON object
// they stand for; Objects not named after their place are refused with
// kube-apiserver's message.
func TestApplyConfigurationValues(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		want    map[string]any
		wantErr string
	}{
		{`Object{metadata: Object.metadata{labels: {"x": jsonpatch.escapeKey("a/b~c")}}, spec: Object.spec{n: 1, f: 1.5, l: [1, 2], ok: true, nil: null}}`,
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "a~1b~0c"}},
				"spec": map[string]any{"n": int64(1), "f": 1.5, "l": []any{int64(1), int64(2)}, "ok": true, "nil": nil}}, ""},
		{`Object{metadata: Object.metadata{labels: object.metadata.labels}}`,
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}, ""},
		{`Object{spec: Object.spec{items: [Object.spec.items{name: "a"}]}}`,
			map[string]any{"spec": map[string]any{"items": []any{map[string]any{"name": "a"}}}}, ""},
		{`Object{spec: Object.spec.wrong{}}`, nil,
			`type mismatch: unexpected type name "Object.spec.wrong", expected "Object.spec", which matches field name path from root Object type`},
		{`Object{spec: Object.spec{m: {1: "x"}}}`, nil, `map key 1 is of type int, not string`},
	} {
		got, err := cel.ApplyConfiguration(mutationEval(t, tc.expr))
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: error %v, want %q", tc.expr, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %#v, %v\nwant %#v", tc.expr, got, err, tc.want)
		}
	}
}

// TestJSONPatchValues: JSONPatch{...} lists become operations, their
// values JSON.
func TestJSONPatchValues(t *testing.T) {
	ops, err := cel.JSONPatch(mutationEval(t, `[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("k8s.io/my~label"), value: object.metadata.name},
		JSONPatch{op: "move", from: "/a", path: "/b"}, JSONPatch{op: "add", path: "/spec", value: Object.spec{x: [1]}}]`))
	if err != nil || len(ops) != 3 {
		t.Fatalf("%v %v", ops, err)
	}
	if ops[0].Op != "add" || ops[0].Path != "/metadata/labels/k8s.io~1my~0label" || ops[1].From != "/a" || ops[1].Val != nil {
		t.Errorf("%+v %+v", ops[0], ops[1])
	}
	v, err := cel.JSONValue(ops[2].Val)
	if err != nil || !reflect.DeepEqual(v, map[string]any{"x": []any{int64(1)}}) {
		t.Errorf("value %#v %v", v, err)
	}
	if _, err := cel.JSONPatch(mutationEval(t, `[1]`)); err == nil || !strings.Contains(err.Error(), "should evaluate to array of JSONPatch") {
		t.Errorf("a list of ints: %v", err)
	}
}
