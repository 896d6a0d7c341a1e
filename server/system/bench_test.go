package system_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/system"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/backend"
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

// benchServer runs a server built from Go code with the system APIs
// (admission policies among them) and gadgets on the memory backend, and
// returns its handler once it is ready.
func benchServer(b *testing.B) http.Handler {
	b.Helper()
	st := backend.New(backend.Config{Backend: backend.Memory, MaxObjectBytes: storage.DefaultMaxObjectBytes})
	b.Cleanup(func() { st.Close() })
	cfg := server.NewConfig()
	cfg.Storage = st
	cfg.Logger = discardLogger()
	cfg.Authenticator = authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		if r.Header.Get(userHeader) != "admin" {
			return nil, false, nil
		}
		return &authn.Response{User: authn.User{Name: "admin", Groups: []string{authn.AllAuthenticated, authn.SystemPrivilegedGroup}}}, true, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	cfg.SecureServing.Listener = ln
	sys, err := system.Defaults(cfg)
	if err != nil {
		b.Fatal(err)
	}
	resource := meta.GroupResource{Group: "example.com", Resource: "gadgets"}
	s, err := cfg.Storage.For(resource)
	if err != nil {
		b.Fatal(err)
	}
	gadgets, err := registry.NewStore(registry.Options[*gadget]{Resource: resource, Kind: "Gadget", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*gadget]{}, Storage: s})
	if err != nil {
		b.Fatal(err)
	}
	completed, err := cfg.Complete()
	if err != nil {
		b.Fatal(err)
	}
	srv, err := completed.New("bench", server.NewEmptyDelegate())
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.InstallAPIGroup(server.NewAPIGroupInfo("example.com").AddVersion("v1", registry.Serve(gadgets))); err != nil {
		b.Fatal(err)
	}
	if err := system.Install(srv, sys); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.PrepareRun().Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := httptest.NewRequest("GET", "/readyz", nil)
		w := httptest.NewRecorder()
		srv.Handler.ServeHTTP(w, r)
		if w.Code == http.StatusOK {
			return srv.Handler
		}
		if time.Now().After(deadline) {
			b.Fatalf("not ready within 60 s: %d %s", w.Code, w.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
