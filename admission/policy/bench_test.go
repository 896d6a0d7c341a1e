package policy

import (
	"context"
	"runtime"
	"testing"

	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/internal/proccpu"
)

// BenchmarkValidate is the plugin's cost on one create: with no policy,
// and with one matching policy of three validations (all passing, the
// common case), untracked as compiled (policyset.Untrack) and with its
// cost tracked, as before. go test ./admission/policy -run x -bench Validate
func BenchmarkValidate(b *testing.B) {
	three := newPolicy("three",
		registration.Validation{Expression: "object.spec.size < 10"},
		registration.Validation{Expression: "object.metadata.name.startsWith('w')"},
		registration.Validation{Expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"})
	for _, bc := range []struct {
		name     string
		policies []*registration.ValidatingAdmissionPolicy
		bindings []*registration.ValidatingAdmissionPolicyBinding
		tracked  bool
	}{
		{"none", nil, nil, false},
		{"one-policy-three-rules", []*registration.ValidatingAdmissionPolicy{three},
			[]*registration.ValidatingAdmissionPolicyBinding{newBinding("three", "three", registration.Deny)}, false},
		{"one-policy-three-rules-tracked", []*registration.ValidatingAdmissionPolicy{three},
			[]*registration.ValidatingAdmissionPolicyBinding{newBinding("three", "three", registration.Deny)}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src := NewSource()
			if bc.tracked {
				src = &Source{set: policyset.NewSource[*registration.ValidatingAdmissionPolicy, *registration.ValidatingAdmissionPolicyBinding](
					func(p *registration.ValidatingAdmissionPolicy) *compiled { return compileTracking(p, true) })}
			}
			src.SetPolicies(bc.policies)
			src.SetBindings(bc.bindings)
			p, err := New(Config{Source: src})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			a := attrs(3, map[string]string{"env": "prod"})
			b.ReportAllocs()
			runtime.GC()
			start := proccpu.Used()
			for b.Loop() {
				if err := p.Validate(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := proccpu.Used() - start; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
