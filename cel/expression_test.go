package cel

import (
	"context"
	"errors"
	"slices"
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

// TestEstimatedCost holds the library's static estimates to kube's
// formulas, for v.s a string of maxLength 100 (400 bytes), v.l a list of
// at most 10 strings of maxLength 10 and v.n a list of at most 10 ints.
// Reading v.s costs 2; a call kube does not estimate costs 1.
func TestEstimatedCost(t *testing.T) {
	vars := obj(prop("s", &schema.Schema{Type: "string", MaxLength: i64(100)}),
		prop("l", &schema.Schema{Type: "array", MaxItems: i64(10), Items: &schema.Schema{Type: "string", MaxLength: i64(10)}}),
		prop("n", &schema.Schema{Type: "array", MaxItems: i64(10), Items: intS()}))
	c, err := NewCompiler(Variable{Name: "v", Schema: vars})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		expr string
		want uint64
	}{
		{"v.s", 2},
		{"isQuantity(v.s)", 2 + 40},     // 400 x 0.1
		{"ip.isCanonical(v.s)", 2 + 80}, // 400 x 0.2
		{"quantity(v.s).isInteger()", 2 + 40 + 1},
		{"v.s.lowerAscii()", 2 + 40},                    // 400 x 0.1
		{"v.s.find('[0-9]+')", 2 + 41*2},                // ceil(401 x 0.1) x ceil(6 x 0.25)
		{"v.s.findAll('ab')", 2 + 41*1},                 // ceil(401 x 0.1) x ceil(2 x 0.25)
		{"v.n.sum()", 2 + 10},                           // one per element
		{"v.l.isSorted()", 2 + 10*5},                    // (1 + 40 x 0.1) per element
		{"v.l.indexOf('a')", 2 + 10*5},                  // the same
		{"url(v.s).getHost()", 2 + 40 + 1},              // url() 400 x 0.1, getHost 1
		{"cidr(v.s).containsIP('1.2.3.4')", 42 + 4 + 1}, // cidr() 2 + 40, then ceil(32 x 0.1) + ceil(7 x 0.1)
		{"cidr(v.s).containsCIDR(cidr(v.s))", 42 + 42 + 4 + 2 + 1},
		{"format.dns1123Label().validate(v.s)", 1 + 2 + 40*32}, // 400 x 0.1 x (128 x 0.25)
		{"quantity(v.s) == quantity(v.s)", 42 + 42 + 1},
		{"url(v.s).getScheme() == 'https'", 2 + 40 + 1 + 1},
		{"v.s.split(',')", 2 + 80},         // 400 x 0.2
		{"v.l.join(',')", 2 + 41},          // ceil((10 x 40 + 9 x 1) x 0.1)
		{"v.s.replace('a', 'bb')", 2 + 80}, // 400 x 0.2
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := c.Compile(tc.expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e.MaxCost != tc.want {
				t.Fatalf("estimated cost %d, want %d", e.MaxCost, tc.want)
			}
		})
	}
}

// TestEvalContext: an expression without a comprehension is evaluated
// without a context of its own; it must give what cel-go's ContextEval
// gives, for a live and for a cancelled context, and an expression with
// one must still stop when the context ends.
func TestEvalContext(t *testing.T) {
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = int64(i)
	}
	vars := map[string]any{
		ObjectVarName:  map[string]any{"metadata": map[string]any{"name": "f1"}, "spec": map[string]any{"items": items}},
		RequestVarName: map[string]any{"operation": "CREATE"},
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		expr          string
		interruptible bool
	}{
		{expr: "object.metadata.name.startsWith('f') && request.operation == 'CREATE'"},
		{expr: "object.spec.nope"},
		{expr: "object.metadata.name + '-' + string(size(object.spec.items))"},
		{expr: "object.spec.items[999] == 999 ? 'last' : 'other'"},
		{expr: "object.spec.items.all(i, i >= 0)", interruptible: true},
		{expr: "object.spec.items.map(i, i * 2)[3]", interruptible: true},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := c.Compile(tc.expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e.interruptible != tc.interruptible {
				t.Fatalf("interruptible %v, want %v", e.interruptible, tc.interruptible)
			}
			for _, ctx := range []context.Context{context.Background(), cancelled} {
				got, cost, err := e.Eval(ctx, vars, PerCallLimit)
				want, det, wantErr := e.program.ContextEval(ctx, &varActivation{vars: vars, decls: e.decls})
				if tc.interruptible && ctx == cancelled {
					if err == nil || !strings.Contains(err.Error(), "context canceled") {
						t.Fatalf("cancelled: got %v, %v; want the context's error", got, err)
					}
					continue
				}
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("error %v, want %v", err, wantErr)
				}
				if err == nil && got.Equal(want) != types.True {
					t.Fatalf("got %v, want %v", got, want)
				}
				if wantCost := int64(*det.ActualCost()); cost != wantCost {
					t.Fatalf("cost %d, want %d", cost, wantCost)
				}
			}
		})
	}
}

// TestReferences: the variables an expression reads, which callers may
// skip building when no expression reads them.
func TestReferences(t *testing.T) {
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	all := []string{ObjectVarName, OldObjectVarName, RequestVarName, ParamsVarName, NamespaceObjectVarName,
		VariablesVarName, AuthorizerVarName, RequestResourceVarName}
	tests := []struct {
		expr string
		want []string
	}{
		{expr: "object.spec.size < 10", want: []string{ObjectVarName}},
		{expr: "'object'.size() > 0 && 1 < 2"},
		{expr: "request.userInfo.username == 'a' || oldObject == null", want: []string{RequestVarName, OldObjectVarName}},
		{expr: "params.max > variables.n && namespaceObject.metadata.name != ''", want: []string{ParamsVarName, VariablesVarName, NamespaceObjectVarName}},
		{expr: "authorizer.requestResource.check('get').allowed()", want: []string{RequestResourceVarName}},
		{expr: "authorizer.group('').resource('x').check('get').allowed()", want: []string{AuthorizerVarName}},
		{expr: "object.spec.items.exists(i, i == request.name)", want: []string{ObjectVarName, RequestVarName}},
		{expr: "[1, 2].all(x, x > 0)"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := c.Compile(tc.expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range all {
				if got, want := e.References(name), slices.Contains(tc.want, name); got != want {
					t.Errorf("References(%q) = %v, want %v", name, got, want)
				}
			}
		})
	}
}
