package policy

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/admission/policyset/policysettest"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
)

// FuzzPolicyExpression stores and runs a policy of arbitrary validation
// and message expressions: validating it, type-checking it and evaluating
// it on a write never panic, and a refusal is a Status with one of the
// codes a policy may answer.
//
// go test ./admission/policy -run XXX -fuzz FuzzPolicyExpression -fuzztime 1m
func FuzzPolicyExpression(f *testing.F) {
	for _, seed := range [][2]string{
		{"object.spec.size < 10", ""},
		{"object.spec.size < 10", "'size ' + string(object.spec.size)"},
		{"object.metadata.name.startsWith('w')", "object.metadata.name"},
		{"has(object.metadata.labels) && object.metadata.labels.all(k, k.size() < 10)", ""},
		{"request.operation == 'CREATE' && request.userInfo.username == 'alice'", ""},
		{"params == null && namespaceObject == null", ""},
		{"object.nope == 1", "object.nope"},
		{"[1, 2, 3].all(x, [1, 2, 3].all(y, x * y < 100))", ""},
		{"quantity('1Gi').isGreaterThan(quantity('1Mi'))", ""},
		{"object.spec.size / 0 == 1", ""},
		{"'a'.repeat(1000000).size() > 0", ""},
		{"((((", ")))"},
		{"", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	rs := withWidgets{policysettest.New(f, false)}
	codes := []int32{401, 403, 413, 422}
	f.Fuzz(func(t *testing.T, expr, msgExpr string) {
		pol := &registration.ValidatingAdmissionPolicy{ObjectMeta: meta.ObjectMeta{Name: "p", UID: "p", Generation: 1},
			Spec: registration.ValidatingAdmissionPolicySpec{
				MatchConstraints: &registration.MatchResources{ResourceRules: rule([]string{"example.com"}, []string{"v1"}, []string{"widgets"})},
				Validations:      []registration.Validation{{Expression: expr, MessageExpression: msgExpr}},
			}}
		registration.SetPolicyDefaults(pol)
		_ = TypeCheck(pol, rs)
		if errs := registration.ValidatePolicy(pol); len(errs) > 0 {
			return
		}
		p := newPlugin(t, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{newBinding("b", "p", registration.Deny)})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := p.Validate(ctx, attrs(12, map[string]string{"env": "prod"}))
		if err == nil {
			return
		}
		var se *meta.StatusError
		if !errors.As(err, &se) || !slices.Contains(codes, se.ErrStatus.Code) {
			t.Fatalf("%q: refused with %v", expr, err)
		}
	})
}
