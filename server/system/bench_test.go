package system_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/proccpu"
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
// rules, all passing, each on a server of its own. It reports the
// process's CPU time per create (cpu-ns/op, GC included), which the
// machine's load moves less than wall-clock time. docs/benchmarks.md
// gives the ratio:
//
//	go test ./server/system -run x -bench CreateWithPolicy -benchtime 3000x -count 3
func BenchmarkCreateWithPolicy(b *testing.B) {
	for _, withPolicy := range []bool{false, true} {
		name := "none"
		if withPolicy {
			name = "one-policy-three-rules"
		}
		b.Run(name, func(b *testing.B) {
			// A server of its own: the second run would otherwise create
			// into a store, watch cache and heap holding the first's
			// objects, and pay for them.
			create := gadgetCreator(b, withPolicy)
			b.ReportAllocs()
			runtime.GC()
			start := proccpu.Used()
			for b.Loop() {
				create()
			}
			if cpu := proccpu.Used() - start; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkCreateWithPolicyInterleaved is the figure measured so
// that a loaded machine moves both cases alike: a server without a policy
// and one with the three rules, in one process, take turns of 100 creates
// (which goes first alternates), and each turn's CPU time is paired with
// the other server's adjacent one. It reports both cases' CPU per create
// and the median and quartiles of the pairs' ratios (policy over none);
// b.N counts the creates of both.
//
//	go test ./server/system -run x -bench CreateWithPolicyInterleaved -benchtime 40000x
func BenchmarkCreateWithPolicyInterleaved(b *testing.B) {
	none, policy := gadgetCreator(b, false), gadgetCreator(b, true)
	const turn = 100
	timed := func(create func()) time.Duration {
		start := proccpu.Used()
		for range turn {
			create()
		}
		return proccpu.Used() - start
	}
	var ratios []float64
	var cpuNone, cpuPolicy time.Duration
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i += 2 * turn {
		var n, p time.Duration
		if i/(2*turn)%2 == 0 {
			n = timed(none)
			p = timed(policy)
		} else {
			p = timed(policy)
			n = timed(none)
		}
		cpuNone += n
		cpuPolicy += p
		if n > 0 {
			ratios = append(ratios, float64(p)/float64(n))
		}
	}
	b.StopTimer()
	if len(ratios) == 0 {
		return
	}
	slices.Sort(ratios)
	turns := float64(len(ratios) * turn)
	b.ReportMetric(float64(cpuNone.Nanoseconds())/turns, "none-cpu-ns/op")
	b.ReportMetric(float64(cpuPolicy.Nanoseconds())/turns, "policy-cpu-ns/op")
	b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
	b.ReportMetric(ratios[len(ratios)/4], "ratio-q1")
	b.ReportMetric(ratios[len(ratios)*3/4], "ratio-q3")
}

// gadgetCreator starts the benchmark's server, with the policy of three
// rules and its binding in effect when withPolicy, and returns a function
// creating one gadget (each of another name) through its handler.
func gadgetCreator(b *testing.B, withPolicy bool) func() {
	b.Helper()
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
	if withPolicy {
		if code := do("POST", policies, benchPolicy); code != http.StatusCreated {
			b.Fatalf("creating the policy: %d", code)
		}
		if code := do("POST", bindings, benchBinding); code != http.StatusCreated {
			b.Fatalf("creating the binding: %d", code)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for refused() != withPolicy {
		if time.Now().After(deadline) {
			b.Fatalf("the policy in effect: not %v within 60 s", withPolicy)
		}
		time.Sleep(20 * time.Millisecond)
	}
	i := 0
	return func() {
		i++
		body := fmt.Sprintf(`{"metadata":{"name":"g-%d","labels":{"app":"bench"}},"spec":{"size":3,"mode":"fast"}}`, i)
		if code := do("POST", gadgets, body); code != http.StatusCreated {
			b.Fatalf("create: %d", code)
		}
	}
}

// benchServer runs the benchmark's server (startGoCodeServer, serving
// gadgets) and returns its handler once it is ready.
func benchServer(b *testing.B) http.Handler {
	b.Helper()
	return startGoCodeServer[*gadget](b, "bench", "gadgets", "Gadget").Handler
}
