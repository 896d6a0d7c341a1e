package cel

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/schema"
)

func TestAdmissionExpressions(t *testing.T) {
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{
		ObjectVarName: map[string]any{"metadata": map[string]any{"name": "f1", "labels": map[string]any{"env": "prod"}},
			"spec": map[string]any{"replicas": int64(3)}},
		OldObjectVarName: nil,
		RequestVarName:   map[string]any{"operation": "CREATE", "userInfo": map[string]any{"username": "alice"}},
		ParamsVarName:    map[string]any{"maxReplicas": int64(2)},
		VariablesVarName: map[string]any{},
	}
	tests := []struct {
		expr    string
		want    any
		wantErr string
	}{
		{expr: "object.spec.replicas <= params.maxReplicas", want: false},
		{expr: "request.operation == 'CREATE' && oldObject == null", want: true},
		{expr: "'env' in object.metadata.labels && object.metadata.labels.env == 'prod'", want: true},
		{expr: "object.metadata.name + ' by ' + request.userInfo.username", want: "f1 by alice"},
		{expr: "has(object.spec.paused)", want: false},
		{expr: "object.spec.paused", wantErr: "no such key: paused"},
		{expr: "object.spec.replicas +", wantErr: "compilation failed: ERROR: <input>:1:23: Syntax error"},
		{expr: "nope.x", wantErr: "undeclared reference to 'nope'"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := c.Compile(tc.expr, nil)
			if err == nil {
				var val ref.Val
				val, _, err = e.Eval(context.Background(), vars, PerCallLimit)
				if err == nil && val.Equal(types.DefaultTypeAdapter.NativeToValue(tc.want)) != types.True {
					t.Fatalf("got %v, want %v", val, tc.want)
				}
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestTypedVariables(t *testing.T) {
	flunder := obj(prop("spec", obj(prop("replicas", intS()), prop("tags",
		&schema.Schema{Type: "array", MaxItems: i64(4), Items: &schema.Schema{Type: "string", MaxLength: i64(16)}}))))
	c, err := NewCompiler(Variable{Name: ObjectVarName, Schema: flunder, ResourceRoot: true}, Variable{Name: RequestVarName})
	if err != nil {
		t.Fatal(err)
	}
	// A typed variable is type-checked: a field the schema lacks is a
	// compile error, and the result type is checked.
	if _, err := c.Compile("object.spec.replicaz > 1", types.BoolType); err == nil || !strings.Contains(err.Error(), "undefined field 'replicaz'") {
		t.Fatalf("error %v, want undefined field", err)
	}
	if _, err := c.Compile("object.spec.replicas", types.BoolType); err == nil || !strings.Contains(err.Error(), "must evaluate to bool but got int") {
		t.Fatalf("error %v, want a type mismatch", err)
	}
	if _, err := c.Compile("object.metadata.name.size() > 0", types.BoolType); err != nil {
		t.Fatalf("metadata.name of a resource root: %v", err)
	}
	// Schema bounds bound the estimate: 4 tags of 16 characters.
	bounded, err := c.Compile("object.spec.tags.all(t, t.startsWith('x'))", types.BoolType)
	if err != nil {
		t.Fatal(err)
	}
	unbounded, err := c.Compile("request.tags.all(t, t.startsWith('x'))", types.BoolType)
	if err != nil {
		t.Fatal(err)
	}
	if bounded.MaxCost >= unbounded.MaxCost || bounded.MaxCost > 100 {
		t.Fatalf("estimated cost %d (typed, bounded) vs %d (dyn)", bounded.MaxCost, unbounded.MaxCost)
	}
	val, cost, err := bounded.Eval(context.Background(), map[string]any{
		ObjectVarName: map[string]any{"spec": map[string]any{"tags": []any{"xa", "xb"}}}}, PerCallLimit)
	if err != nil || val != types.True || cost <= 0 {
		t.Fatalf("got %v cost %d error %v", val, cost, err)
	}
	if _, _, err := bounded.Eval(context.Background(), map[string]any{
		ObjectVarName: map[string]any{"spec": map[string]any{"tags": []any{"xa", "xb"}}}}, 1); !errors.Is(err, ErrBudget) {
		t.Fatalf("error %v, want ErrBudget", err)
	}
}

func TestCompilerDuplicateVariable(t *testing.T) {
	if _, err := NewCompiler(Variable{Name: "a"}, Variable{Name: "a"}); err == nil {
		t.Fatal("want an error for a variable declared twice")
	}
}
