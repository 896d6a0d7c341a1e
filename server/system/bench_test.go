package system_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
)

// gadget is the object the benchmark creates: a spec for the policy's
// rules to read.
type gadget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		Size int    `json:"size"`
		Mode string `json:"mode,omitempty"`
	} `json:"spec"`
}

// The policy of three rules the figure names, on gadgets, and
// its binding (Deny).
const (
	benchPolicy = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"three"},
"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["gadgets"]}]},
"validations":[{"expression":"object.spec.size < 10","message":"gadgets must be small"},
{"expression":"object.metadata.name.startsWith('g')"},
{"expression":"!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"}]}}`
	benchBinding = `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"three"},
"spec":{"policyName":"three","validationActions":["Deny"]}}`
)

// BenchmarkCreateWithPolicy is the figure: a whole create (the
// filter chain, routing, decoding, admission, the registry and the memory
// backend, with the server's informers and watch cache running) with no
// ValidatingAdmissionPolicy, and with one matching policy of three CEL
// rules, all passing. It reports the process's CPU time per create
// (cpu-ns/op, GC included), which the machine's load moves less than
// wall-clock time. docs/benchmarks.md gives the ratio:
//
//	go test ./server/system -run x -bench CreateWithPolicy -benchtime 3000x -count 3
func BenchmarkCreateWithPolicy(b *testing.B) {
	h := benchServer(b)
	do := func(method, path, body string) int {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set(userHeader, "admin")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const gadgets = "/apis/example.com/v1/namespaces/ns/gadgets"
	const policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	const bindings = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
	// refused reports whether a gadget the policy refuses is refused:
	// whether the policy is in effect.
	probe := 0
	refused := func() bool {
		probe++
		return do("POST", gadgets, fmt.Sprintf(`{"metadata":{"name":"probe-%d"},"spec":{"size":50}}`, probe)) == http.StatusUnprocessableEntity
	}
	waitFor := func(want bool) {
		deadline := time.Now().Add(60 * time.Second)
		for refused() != want {
			if time.Now().After(deadline) {
				b.Fatalf("the policy in effect: not %v within 60 s", want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	run := 0
	for _, withPolicy := range []bool{false, true} {
		name := "none"
		if withPolicy {
			name = "one-policy-three-rules"
		}
		b.Run(name, func(b *testing.B) {
			if withPolicy {
				if code := do("POST", policies, benchPolicy); code != http.StatusCreated {
					b.Fatalf("creating the policy: %d", code)
				}
				if code := do("POST", bindings, benchBinding); code != http.StatusCreated {
					b.Fatalf("creating the binding: %d", code)
				}
				defer func() {
					do("DELETE", bindings+"/three", "")
					do("DELETE", policies+"/three", "")
					waitFor(false)
				}()
			}
			waitFor(withPolicy)
			run++
			i := 0
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				i++
				body := fmt.Sprintf(`{"metadata":{"name":"g-%d-%d","labels":{"app":"bench"}},"spec":{"size":3,"mode":"fast"}}`, run, i)
				if code := do("POST", gadgets, body); code != http.StatusCreated {
					b.Fatalf("create: %d", code)
				}
			}
			if cpu := processCPU() - start; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// benchServer runs the benchmark's server (startGoCodeServer, serving
// gadgets) and returns its handler once it is ready.
func benchServer(b *testing.B) http.Handler {
	b.Helper()
	return startGoCodeServer[*gadget](b, "bench", "gadgets", "Gadget").Handler
}
