package policy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
)

// passing are validations that let attrs(3, {"env": "prod"}) through, of
// the kinds of work cel-go costs differently: selections, presence tests,
// string and list functions, comprehensions, regexes, conditionals,
// variables, request, a comment at the end.
var passing = []string{
	"object.spec.size < 10",
	"object.metadata.name.startsWith('w')",
	"!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)",
	"object.metadata.labels.env == 'prod' // a comment",
	"object.metadata.name.matches('^w[0-9]+$')",
	"[1, 2, 3].all(i, i < object.spec.size + 1)",
	"object.metadata.labels.exists(k, k == 'env') ? object.spec.size > 0 : false",
	"size(object.metadata.name) + size(variables.who) < 64",
	"request.userInfo.username.lowerAscii() == 'alice' && 'dev' in request.userInfo.groups",
	"string(object.spec.size).size() == 1 && [string(object.metadata.name), 'x'].size() == 2",
	"variables.who == 'alice'",
}

// TestAllPassCost: the validations' conjunction is true when each is, at
// the sum of their costs, so evaluating it in their stead takes from the
// policy's budget what they would have.
func TestAllPassCost(t *testing.T) {
	for n := 2; n <= len(passing); n++ {
		for start := 0; start+n <= len(passing); start += max(1, n/2) {
			exprs := passing[start : start+n]
			t.Run(fmt.Sprint(exprs), func(t *testing.T) {
				var vs []registration.Validation
				for _, e := range exprs {
					vs = append(vs, registration.Validation{Expression: e})
				}
				pol := newPolicy("p", vs...)
				pol.Spec.Variables = []registration.Variable{{Name: "who", Expression: "request.userInfo.username"}}
				// Tracked: an untracked program reports no cost.
				c := compileTracking(pol, true)
				if c.err != nil || c.allPass == nil {
					t.Fatalf("compiled: %v, conjunction %v", c.err, c.allPass)
				}
				a := attrs(3, map[string]string{"env": "prod"})
				vars, err := (&policyset.Version{Kind: a.Kind, Resource: a.Resource, Own: true}).Vars(a, c.Reads)
				if err != nil {
					t.Fatal(err)
				}
				policyset.SetOptional(context.Background(), vars, a, nil, nil, nil, c.Reads)
				budget := int64(cel.RuntimeCELCostBudget)
				c.SetVariables(context.Background(), vars, &budget)
				var sum int64
				for _, v := range c.validations {
					val, cost, err := v.expr.Eval(context.Background(), vars, cel.PerCallLimit)
					if err != nil || val != types.True {
						t.Fatalf("%s: %v %v", v.v.Expression, val, err)
					}
					sum += cost
				}
				val, cost, err := c.allPass.Eval(context.Background(), vars, cel.PerCallLimit)
				if err != nil || val != types.True || cost != sum {
					t.Fatalf("conjunction: %v %v, cost %d, want true at %d", val, err, cost, sum)
				}
			})
		}
	}
}

// TestAllPassSameDecisions: a plugin with the conjunction and its
// expressions untracked where they cannot reach the cost limits, and one
// evaluating each validation with its cost tracked, as kube-apiserver
// does, give every write the same answer: refusal and its message,
// warnings, audit annotations, with validations passing, failing (with a
// message, a messageExpression, a reason), in error, over the budget,
// with Deny, Warn and Audit.
func TestAllPassSameDecisions(t *testing.T) {
	type outcome struct {
		err         string
		warnings    []string
		annotations map[string]string
	}
	// untracked counts the fast runs whose policy was untracked.
	untracked, runs := 0, 0
	run := func(t *testing.T, pol *registration.ValidatingAdmissionPolicy, a *admission.Attributes, fast bool) outcome {
		t.Helper()
		p := newPlugin(t, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{
			newBinding("deny", pol.Name, registration.Deny), newBinding("warn-audit", pol.Name, registration.Warn, registration.Audit)})
		snap, err := p.cfg.Source.set.Wait(context.Background(), a, p.cfg.SyncTimeout)
		if err != nil {
			t.Fatal(err)
		}
		c := snap.Policies[pol.Name].Compiled
		if fast && c.allPass == nil {
			t.Fatalf("no conjunction for %v", pol.Spec.Validations)
		}
		if fast && c.untracked {
			untracked++
		}
		if !fast {
			*c = *compileTracking(pol, true)
			c.allPass = nil
		}
		var o outcome
		rec := audit.NewRecorder(audit.Event{})
		ctx := audit.WithRecorder(admission.WithWarnings(context.Background(), func(m string) { o.warnings = append(o.warnings, m) }), rec)
		if err := p.Validate(ctx, a); err != nil {
			o.err = err.Error()
		}
		o.annotations = rec.Snapshot().Annotations
		return o
	}
	failing := []registration.Validation{
		{Expression: "object.spec.size < 2", Message: "tiny"},
		{Expression: "object.metadata.name.startsWith('x')", MessageExpression: "'name ' + object.metadata.name"},
		{Expression: "object.spec.nope > 1"},
		{Expression: "object.spec.size < 2", Reason: ptr(meta.StatusReasonForbidden)},
		{Expression: "[1, 2, 3].all(i, i > 2) || object.metadata.labels.env == 'dev'"},
	}
	var sets [][]registration.Validation
	for i := range passing {
		sets = append(sets, []registration.Validation{{Expression: passing[i]}, {Expression: passing[(i+1)%len(passing)]}})
		for _, f := range failing {
			sets = append(sets, []registration.Validation{{Expression: passing[i]}, f, {Expression: passing[(i+3)%len(passing)]}})
		}
	}
	for i, vs := range sets {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			pol := newPolicy("p", vs...)
			pol.Spec.Variables = []registration.Variable{{Name: "who", Expression: "request.userInfo.username"}}
			pol.Spec.AuditAnnotations = []registration.AuditAnnotation{{Key: "size", ValueExpression: "string(object.spec.size)"}}
			for _, size := range []int{3, 12} {
				a := func() *admission.Attributes { return attrs(size, map[string]string{"env": "prod"}) }
				fast, slow := run(t, pol, a(), true), run(t, pol, a(), false)
				runs++
				if fast.err != slow.err || !slices.Equal(fast.warnings, slow.warnings) || fmt.Sprint(fast.annotations) != fmt.Sprint(slow.annotations) {
					t.Errorf("size %d:\nwith the conjunction %+v\nwithout             %+v", size, fast, slow)
				}
			}
		})
	}
	// Both kinds compared: untracked policies and tracked ones (those
	// with a comprehension over the object's labels).
	if untracked == 0 || untracked == runs {
		t.Fatalf("%d of %d policies untracked: want some of each", untracked, runs)
	}
}

// TestAllPassNotWithAuthorizer: validations asking the authorizer are
// evaluated one by one, so a refused write does not ask it twice.
func TestAllPassNotWithAuthorizer(t *testing.T) {
	for _, tc := range []struct {
		exprs []string
		want  bool
	}{
		{[]string{"object.spec.size < 10", "object.metadata.name != ''"}, true},
		{[]string{"object.spec.size < 10"}, false},
		{[]string{"object.spec.size < 10", "authorizer.requestResource.check('get').allowed()"}, false},
		{[]string{"authorizer.group('').resource('pods').check('get').allowed()", "true"}, false},
	} {
		var vs []registration.Validation
		for _, e := range tc.exprs {
			vs = append(vs, registration.Validation{Expression: e})
		}
		if c := compile(newPolicy("p", vs...)); c.err != nil || (c.allPass != nil) != tc.want {
			t.Errorf("%q: conjunction %v (error %v), want one: %v", tc.exprs, c.allPass != nil, c.err, tc.want)
		}
	}
}
