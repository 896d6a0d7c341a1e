package policyset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policyset/policysettest"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

type testSource = Source[*registration.MutatingAdmissionPolicy, *registration.MutatingAdmissionPolicyBinding, int]

var widgets = meta.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func attrs(ns string) *admission.Attributes {
	return &admission.Attributes{Operation: admission.Create, Kind: widgets.GroupVersion().WithKind("Widget"), Resource: widgets,
		Namespace: ns, Name: "w1"}
}

// newSource returns a Source of one policy on widgets with paramKind
// kind, bound by one binding with ref, reading params from s until the
// test ends. Its compile counts compilations.
func newSource(t *testing.T, s *policysettest.Served, kind *registration.ParamKind, ref *registration.ParamRef) *testSource {
	t.Helper()
	compiles := 0
	src := NewSource[*registration.MutatingAdmissionPolicy, *registration.MutatingAdmissionPolicyBinding](func(*registration.MutatingAdmissionPolicy) int {
		compiles++
		return compiles
	})
	src.SetPolicies([]*registration.MutatingAdmissionPolicy{{ObjectMeta: meta.ObjectMeta{Name: "p", UID: "p", Generation: 1},
		Spec: registration.MutatingAdmissionPolicySpec{ParamKind: kind, MatchConstraints: &registration.MatchResources{
			ResourceRules: []registration.NamedRuleWithOperations{{RuleWithOperations: registration.RuleWithOperations{
				Operations: []registration.OperationType{registration.Create},
				Rule:       registration.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}}}}}})
	src.SetBindings([]*registration.MutatingAdmissionPolicyBinding{{ObjectMeta: meta.ObjectMeta{Name: "b"},
		Spec: registration.MutatingAdmissionPolicyBindingSpec{PolicyName: "p", ParamRef: ref}}})
	ctx, cancel := context.WithCancel(context.Background())
	wait := src.WatchParams(ctx, s, slog.Default())
	t.Cleanup(func() { cancel(); wait() })
	return src
}

// dispatch runs Dispatch on the only binding of src and returns the
// params' names (namespace/name, "-" for a nil param).
func dispatch(src *testSource, a *admission.Attributes) ([]string, error) {
	snap := src.Current()
	b := snap.Bindings[0]
	v, params, err := Dispatch(context.Background(), nil, snap.Policies[b.Binding.Spec.PolicyName], b, a)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errors.New("no match")
	}
	var out []string
	for _, p := range params {
		if p == nil {
			out = append(out, "-")
			continue
		}
		data, _ := p.Value["data"].(map[string]any)
		out = append(out, fmt.Sprintf("%s/%s=%v", p.Namespace, p.Name, data["v"]))
	}
	return out, nil
}

// TestCollectParams holds paramRef to kube-apiserver's CollectParams: by
// name (in the write's namespace or paramRef's), by selector, missing
// with Deny and Allow, a paramKind not served, the scope errors, and
// their configuration errors.
func TestCollectParams(t *testing.T) {
	s := policysettest.New(t, false)
	s.ConfigMap(t, "default", "p1", map[string]string{"pick": "yes"}, map[string]string{"v": "1"})
	s.ConfigMap(t, "default", "p2", map[string]string{"pick": "yes"}, map[string]string{"v": "2"})
	s.ConfigMap(t, "other", "p1", map[string]string{"pick": "yes"}, map[string]string{"v": "3"})
	if _, err := s.Roots.Create(context.Background(), "", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{Name: "r"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &registration.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	deny, allow := registration.DenyAction, registration.AllowAction
	pick := &meta.LabelSelector{MatchLabels: map[string]string{"pick": "yes"}}
	for _, tc := range []struct {
		name string
		kind *registration.ParamKind
		ref  *registration.ParamRef
		ns   string
		want string // the params, or the error
	}{
		{"no paramKind", nil, &registration.ParamRef{Name: "p1"}, "default", "-"},
		{"no paramRef", cm, nil, "default", "-"},
		{"by name in the write's namespace", cm, &registration.ParamRef{Name: "p1"}, "default", "default/p1=1"},
		{"by name in paramRef's namespace", cm, &registration.ParamRef{Name: "p1", Namespace: "other"}, "default", "other/p1=3"},
		{"by selector", cm, &registration.ParamRef{Selector: pick}, "default", "default/p1=1 default/p2=2"},
		{"by selector in paramRef's namespace", cm, &registration.ParamRef{Selector: pick, Namespace: "other"}, "default", "other/p1=3"},
		{"missing, Allow", cm, &registration.ParamRef{Name: "nope", ParameterNotFoundAction: &allow}, "default", ""},
		{"missing, Deny", cm, &registration.ParamRef{Name: "nope", ParameterNotFoundAction: &deny}, "default",
			"failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{"selecting none, Deny", cm, &registration.ParamRef{Selector: pick, Namespace: "empty", ParameterNotFoundAction: &deny}, "default",
			"failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{"namespaced paramKind, cluster-scoped write", cm, &registration.ParamRef{Name: "p1"}, "",
			"failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"},
		{"namespace for a cluster-scoped paramKind", &registration.ParamKind{APIVersion: "example.com/v1", Kind: "Root"},
			&registration.ParamRef{Name: "r", Namespace: "default"}, "default",
			"failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`"},
		{"paramKind not served", &registration.ParamKind{APIVersion: "example.com/v1", Kind: "Nope"}, &registration.ParamRef{Name: "x"}, "default",
			"failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dispatch(newSource(t, s, tc.kind, tc.ref), attrs(tc.ns))
			if err != nil {
				var ce *ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("%v is not a *ConfigError", err)
				}
				got = []string{err.Error()}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}

// TestParamInformers: an informer runs per paramKind while a bound
// policy names it; a kind served later is found within seconds; one no
// longer served is dropped.
func TestParamInformers(t *testing.T) {
	s := policysettest.New(t, false)
	s.HideRoots.Store(true)
	if _, err := s.Roots.Create(context.Background(), "", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{Name: "r"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, s, &registration.ParamKind{APIVersion: "example.com/v1", Kind: "Root"}, &registration.ParamRef{Name: "r"})
	running := func() int {
		src.mu.Lock()
		defer src.mu.Unlock()
		return len(src.params.running)
	}
	found := func() error {
		if running() != 1 {
			return errors.New("no informer")
		}
		_, err := dispatch(src, attrs("default"))
		return err
	}
	if _, err := dispatch(src, attrs("default")); err == nil || !strings.Contains(err.Error(), "failed to find resource referenced by paramKind") {
		t.Fatalf("got %v", err)
	}
	s.HideRoots.Store(false)
	policysettest.Eventually(t, "the kind served later is found", found)
	s.HideRoots.Store(true)
	policysettest.Eventually(t, "the kind no longer served is dropped", func() error {
		if n := running(); n != 0 {
			return errors.New("informer still running")
		}
		return nil
	})
	s.HideRoots.Store(false)
	policysettest.Eventually(t, "served again", found)
	src.SetBindings(nil)
	if n := running(); n != 0 {
		t.Errorf("%d informers with no binding", n)
	}
}

// TestCompiledOncePerGeneration: an unchanged generation reuses the
// compiled policy; a new one, or a policy without generation, compiles
// again.
func TestCompiledOncePerGeneration(t *testing.T) {
	src := newSource(t, policysettest.New(t, false), nil, nil)
	first := src.Current().Policies["p"]
	src.SetBindings(nil)
	if got := src.Current().Policies["p"].Compiled; got != first.Compiled {
		t.Errorf("compiled again (%d) for a binding change", got)
	}
	next := *first.Policy
	next.Generation = 2
	src.SetPolicies([]*registration.MutatingAdmissionPolicy{&next})
	if got := src.Current().Policies["p"].Compiled; got == first.Compiled {
		t.Error("not compiled again for a new generation")
	}
}

// notifying is Served telling of changes when the test says so, as a
// server's WatchAPIGroups does.
type notifying struct {
	*policysettest.Served
	mu       sync.Mutex
	watchers map[int]func()
	next     int
}

func (n *notifying) WatchAPIGroups(f func()) (stop func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.next
	n.next++
	n.watchers[id] = f
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.watchers, id)
	}
}

func (n *notifying) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, f := range n.watchers {
		f()
	}
}

func (n *notifying) watching() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.watchers)
}

// TestParamKindsFollowChanges: with resources that tell of their changes
// (a server's WatchAPIGroups), a paramKind served later is found at the
// change, not by polling, and one no longer served is dropped at the
// change; the watch ends with the Source's.
func TestParamKindsFollowChanges(t *testing.T) {
	n := &notifying{Served: policysettest.New(t, false), watchers: map[int]func(){}}
	n.HideRoots.Store(true)
	if _, err := n.Roots.Create(context.Background(), "", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{Name: "r"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	src := NewSource[*registration.MutatingAdmissionPolicy, *registration.MutatingAdmissionPolicyBinding](func(*registration.MutatingAdmissionPolicy) int { return 0 })
	src.SetPolicies([]*registration.MutatingAdmissionPolicy{{ObjectMeta: meta.ObjectMeta{Name: "p", UID: "p", Generation: 1},
		Spec: registration.MutatingAdmissionPolicySpec{ParamKind: &registration.ParamKind{APIVersion: "example.com/v1", Kind: "Root"},
			MatchConstraints: &registration.MatchResources{}}}})
	src.SetBindings([]*registration.MutatingAdmissionPolicyBinding{{ObjectMeta: meta.ObjectMeta{Name: "b"},
		Spec: registration.MutatingAdmissionPolicyBindingSpec{PolicyName: "p", ParamRef: &registration.ParamRef{Name: "r"}}}})
	ctx, cancel := context.WithCancel(context.Background())
	wait := src.WatchParams(ctx, n, slog.Default())
	defer func() { cancel(); wait() }()
	resolved := func() error {
		if st := src.Current().Policies["p"].params; st.err != nil {
			return st.err
		}
		return nil
	}
	if err := resolved(); err == nil || !strings.Contains(err.Error(), "failed to find resource referenced by paramKind") {
		t.Fatalf("got %v", err)
	}
	// Served without a word: not looked up again (kube's one-second retry
	// would have found it twice over).
	n.HideRoots.Store(false)
	time.Sleep(2500 * time.Millisecond)
	if err := resolved(); err == nil {
		t.Fatal("resolved without a change told of")
	}
	n.notify()
	policysettest.Eventually(t, "the kind found at the change", resolved)
	n.HideRoots.Store(true)
	n.notify()
	policysettest.Eventually(t, "the kind no longer served dropped at the change", func() error {
		src.mu.Lock()
		defer src.mu.Unlock()
		if len(src.params.running) != 0 {
			return errors.New("informer still running")
		}
		return nil
	})
	cancel()
	wait()
	if w := n.watching(); w != 0 {
		t.Errorf("%d watches left after the Source stopped", w)
	}
}
