package cel

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
)

// TestRuntimeCostBound holds RuntimeCostBound to cel-go's cost tracker:
// for each expression over variables of any size (here strings, lists
// and maps of thousands), a bound within the limits is at least what the
// tracker charges, and the untracked program gives what the tracked one
// gives. fits says whether the bound is within PerCallLimit: calls
// dispatched at run time ("in" on dyn) are bounded, work that grows with
// a variable's size is not.
func TestRuntimeCostBound(t *testing.T) {
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	big := strings.Repeat("ab", n)
	list := make([]any, n)
	m := make(map[string]any, n)
	for i := range list {
		list[i] = fmt.Sprint(i)
		m[fmt.Sprint(i)] = "v"
	}
	vars := map[string]any{
		ObjectVarName: map[string]any{"s": big, "l": list, "m": m, "i": int64(3),
			"metadata": map[string]any{"name": big, "labels": m}},
		OldObjectVarName: nil,
		RequestVarName:   map[string]any{"userInfo": map[string]any{"username": big, "groups": list}},
		ParamsVarName:    map[string]any{"l": list, "s": big},
		VariablesVarName: map[string]any{"s": big, "l": list},
	}
	for _, tc := range []struct {
		expr string
		fits bool
	}{
		{"object.i < 10", true},
		{"object.s.startsWith('a')", true},
		{"object.s.endsWith('b')", true},
		{"object.s == 'x'", true},
		{"'x' == object.s", true},
		{"object.s != 'abc'", true},
		{"!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)", true},
		{"'5' in object.l", true},
		{"'5' in object.m", true},
		{"'5' in params.l", true},
		{"'dev' in request.userInfo.groups", true},
		{"'x' in variables.l", true},
		{"object.l.exists(x, x == '5')", false},
		{"object.m.all(k, k != 'x')", false},
		{"object.s.contains('ab')", false},
		{"object.s.matches('^a')", false},
		{"object.s.lowerAscii() == 'x'", false},
		{"object.s.upperAscii().size() > 0", false},
		{"object.s.split('a').size() > 0", false},
		{"object.s.replace('a', 'b') == ''", false},
		{"object.s.indexOf('b') > 0", false},
		{"object.s + 'x' == 'y'", false},
		{"size(object.s + object.s) > 0", false},
		{"object.l + object.l == object.l", false},
		{"object.s < 'b'", true},
		{"object.l == object.l", false},
		{"object.l.sum() > 0", false},
		{"variables.s.trim() == ''", false},
		{"request.userInfo.username.lowerAscii() == 'alice'", false},
		{"object.metadata.name.find('[0-9]+') == ''", false},
		{"isURL(object.s)", true},
		{"isIP(object.s) || isCIDR(object.s)", false},
		{"isQuantity(object.s)", false},
		{"object.l.isSorted()", false},
		{"'5' in object.l.map(x, x)", false},
		{"object.l.all(x, true)", false},
		{"object.l.exists(x, false)", false},
		{"object.l.map(x, 1).size() > 0", false},
		{"size(object.m.filter(k, true)) > 0", false},
		{"[object.s, object.s].all(x, x.startsWith('a'))", true},
		{"['1', '2'].exists(x, object.m[x] == 'v')", true},
		{"{'a': 1, 'b': 2}.all(k, object.metadata.labels[k] == 'v' || object.i > 0)", true},
		{"[1, 2].all(i, [3, 4].all(j, object.metadata.name.startsWith('a')))", true},
		{"object.metadata.name[0] == 'a' || object['i'] == 3", true},
		{"['a', 'b'].all(x, x in object.m) || 'q' in object.l", true},
		{"[1, 2, 3].exists(i, i == object.i)", true},
		{"object.s.size() > 3 && object.l.size() > 3 && object.m.size() > 3", true},
		{"string(object.i) == '3' && int(object.s.size()) > 0", true},
		{"size(object.s) > 2 && object.l.size() > 2 && size(object.m) > 2", true},
		{"bytes(object.s).size() > 0 && string(object.s) != '' && double(object.i) > 0.0", true},
		{"uint(object.i) > 0u && bool(object.m['1'] == 'v')", true},
		{"string(object.s) + 'x' == 'y'", false},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := c.Compile(tc.expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			bound := e.RuntimeCostBound()
			if fits := bound <= PerCallLimit; fits != tc.fits {
				t.Fatalf("bound %d: fits %v, want %v", bound, fits, tc.fits)
			}
			if !tc.fits {
				return
			}
			val, cost, err := e.Eval(context.Background(), vars, math.MaxInt64)
			if err != nil {
				t.Fatalf("tracked: %v", err)
			}
			if uint64(cost) > bound {
				t.Fatalf("the tracker charged %d, over the bound %d", cost, bound)
			}
			u, err := e.Untracked()
			if err != nil {
				t.Fatal(err)
			}
			uval, ucost, err := u.Eval(context.Background(), vars, 0)
			if err != nil || uval.Equal(val) != types.True || ucost != 0 {
				t.Fatalf("untracked: %v (cost %d, error %v), tracked: %v", uval, ucost, err, val)
			}
		})
	}
}

// TestUntrackedErrors: an untracked program fails where the tracked one
// does, with the same error, and a comprehension in it still stops when
// the context ends.
func TestUntrackedErrors(t *testing.T) {
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{ObjectVarName: map[string]any{"spec": map[string]any{"size": int64(3)}}}
	for _, expr := range []string{"object.spec.paused", "object.spec.size / 0 > 1", "'x' in object.spec.size"} {
		e, err := c.Compile(expr, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := e.Untracked()
		if err != nil {
			t.Fatal(err)
		}
		_, _, terr := e.Eval(context.Background(), vars, PerCallLimit)
		_, _, uerr := u.Eval(context.Background(), vars, PerCallLimit)
		if terr == nil || uerr == nil || terr.Error() != uerr.Error() {
			t.Errorf("%s: tracked %v, untracked %v", expr, terr, uerr)
		}
	}
	e, err := c.Compile("lists.range(300).all(i, i >= 0)", nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.Untracked()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := u.Eval(ctx, vars, PerCallLimit); err == nil || !strings.Contains(err.Error(), "operation interrupted") {
		t.Fatalf("a cancelled evaluation: %v", err)
	}
}
