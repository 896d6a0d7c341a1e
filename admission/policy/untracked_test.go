package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/authz"
)

// costly is a validation whose bound (454,211) fits the per-call limit,
// 23 of them not the budget; it costs 451,201.
var costly = func() string {
	var l []string
	for i := range 300 {
		l = append(l, fmt.Sprint(i))
	}
	lit := "[" + strings.Join(l, ", ") + "]"
	return lit + ".all(i, " + lit + ".all(j, i != -1))"
}()

// search costs a tenth of the name's length times 10.
var search = "!object.metadata.name.contains('" + strings.Repeat("x", 100) + "')"

// checks are 29 variables asking the authorizer, 350,000 each: 10.15
// million together, over the budget, 28 within it.
var checks = func() []registration.Variable {
	vs := make([]registration.Variable, 29)
	for i := range vs {
		vs[i] = registration.Variable{Name: fmt.Sprintf("v%d", i), Expression: "authorizer.group('').resource('pods').check('get').allowed()"}
	}
	return vs
}()

// TestUntracked: a policy is untracked (policyset.Untrack) only when its
// expressions together cannot reach a limit.
func TestUntracked(t *testing.T) {
	many := make([]registration.Variable, 23)
	for i := range many {
		many[i] = registration.Variable{Name: fmt.Sprintf("v%d", i), Expression: costly}
	}
	for _, tc := range []struct {
		name      string
		vs        []string
		variables []registration.Variable
		want      bool
	}{
		{"the benchmark's three rules", []string{"object.spec.size < 10", "object.metadata.name.startsWith('w')",
			"!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"}, nil, true},
		{"a comprehension over labels", []string{"object.spec.size < 10", "object.metadata.labels.all(k, k != 'x')"}, nil, false},
		{"a string function on a field", []string{search}, nil, false},
		{"within the per-call limit", []string{costly}, nil, true},
		{"the conjunction over the per-call limit", []string{costly, costly, costly}, nil, false},
		{"variables over the budget", []string{"variables.v22"}, many, false},
		{"variables within it", []string{"variables.v20"}, many[:21], true},
		{"authorizer checks over the budget", []string{"variables.v28"}, checks, false},
		{"authorizer checks within it", []string{"variables.v27"}, checks[:28], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var vs []registration.Validation
			for _, e := range tc.vs {
				vs = append(vs, registration.Validation{Expression: e})
			}
			p := newPolicy("p", vs...)
			p.Spec.Variables = tc.variables
			if c := compile(p); c.err != nil || c.untracked != tc.want {
				t.Fatalf("untracked %v (error %v), want %v", c.untracked, c.err, tc.want)
			}
		})
	}
}

// TestCostLimitsTracked: a policy that can reach a limit is refused at
// it, with kube-apiserver's messages, as it would pass untracked.
func TestCostLimitsTracked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v         string
		variables []registration.Variable
		want      string
	}{
		// A name of 1.2 million bytes: 120,000 times 10 (a substring of
		// 100) to search.
		{"per call", search, nil, "expression '" + search + "' resulted in error: operation cancelled: actual cost limit exceeded"},
		{"budget", "variables.v28", checks,
			"validation failed due to running out of cost budget, no further validation rules will be run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := newPolicy("p", registration.Validation{Expression: tc.v})
			pol.Spec.Variables = tc.variables
			src := NewSource()
			src.SetPolicies([]*registration.ValidatingAdmissionPolicy{pol})
			src.SetBindings([]*registration.ValidatingAdmissionPolicyBinding{newBinding("b", "p", registration.Deny)})
			p, err := New(Config{Source: src, Authorizer: authz.AlwaysAllow()})
			if err != nil {
				t.Fatal(err)
			}
			a := attrs(3, nil)
			a.Object.(*widget).Name = strings.Repeat("W", 1200000)
			err = p.Validate(context.Background(), a)
			want := "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: " + tc.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want %q", err, want)
			}
		})
	}
}
