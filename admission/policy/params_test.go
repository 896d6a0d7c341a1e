package policy

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// served is a server's resources for the param tests: configmaps
// (namespaced), roots (cluster-scoped) and, when namespaces is set,
// namespaces; hidden kinds are not served.
type served struct {
	configMaps *registry.Store[*configmaps.ConfigMap]
	roots      *registry.Store[*meta.PartialObjectMetadata]
	namespaces *registry.Store[*namespaces.Namespace]
	hideRoots  atomic.Bool
}

var (
	configMapKind = meta.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	rootKind      = meta.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Root"}
)

func newServed(t testing.TB, withNamespaces bool) *served {
	t.Helper()
	mem := memory.New(memory.WithBookmarkInterval(20*time.Millisecond), memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	f := storage.Shared(mem)
	cms, err := configmaps.New(f)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{configMaps: cms, roots: registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
		Resource: meta.GroupResource{Group: "example.com", Resource: "roots"}, Kind: "Root", StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
	})}
	if withNamespaces {
		if s.namespaces, err = namespaces.New(f); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *served) ResourceFor(k meta.GroupVersionKind) (registry.Resource, bool) {
	switch {
	case k == configMapKind:
		return registry.Serve(s.configMaps), true
	case k == rootKind && !s.hideRoots.Load():
		return registry.Serve(s.roots), true
	case k == namespaceKind && s.namespaces != nil:
		return registry.Serve(s.namespaces), true
	}
	return nil, false
}

func (s *served) ResourceOf(gvr meta.GroupVersionResource) (registry.Resource, bool) {
	for _, k := range []meta.GroupVersionKind{configMapKind, rootKind, namespaceKind} {
		if r, ok := s.ResourceFor(k); ok && r.Info().Resource == gvr.Resource && r.Info().GroupVersion == gvr.GroupVersion() {
			return r, true
		}
	}
	return nil, false
}

func (s *served) configMap(t *testing.T, ns, name string, labels, data map[string]string) {
	t.Helper()
	if _, err := s.configMaps.Create(context.Background(), ns, &configmaps.ConfigMap{
		ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels}, Data: data}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// paramPlugin returns a plugin whose Source reads params from s until
// the test ends.
func paramPlugin(t *testing.T, s *served, ps []*registration.ValidatingAdmissionPolicy, bs []*registration.ValidatingAdmissionPolicyBinding) (*Plugin, *Source) {
	t.Helper()
	src := NewSource()
	src.SetPolicies(ps)
	src.SetBindings(bs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// As Run does: the paramKinds are resolved before the first write.
	src.startParams(ctx, s, slog.Default())
	go func() { defer close(done); src.runParams(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	p, err := New(Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p, src
}

func kindPolicy(apiVersion, kind string, v registration.Validation) *registration.ValidatingAdmissionPolicy {
	return newParamPolicy("p", &registration.ParamKind{APIVersion: apiVersion, Kind: kind}, v)
}

func withParamRef(b *registration.ValidatingAdmissionPolicyBinding, ref registration.ParamRef) *registration.ValidatingAdmissionPolicyBinding {
	b.Spec.ParamRef = &ref
	registration.SetBindingDefaults(b)
	return b
}

// TestParams holds paramKind and paramRef to kube-apiserver's
// CollectParams: by name (in the write's namespace or paramRef's), by
// selector (one evaluation per param), a missing param with Deny and
// Allow, a paramKind no resource serves, and the scope errors.
func TestParams(t *testing.T) {
	s := newServed(t, false)
	s.configMap(t, "default", "limits", nil, map[string]string{"max": "10"})
	s.configMap(t, "other", "limits", nil, map[string]string{"max": "2"})
	s.configMap(t, "default", "a", map[string]string{"limit": "yes"}, map[string]string{"max": "10"})
	s.configMap(t, "default", "b", map[string]string{"limit": "yes"}, map[string]string{"max": "5"})
	if _, err := s.roots.Create(context.Background(), "", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{Name: "r"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	limit := registration.Validation{Expression: "object.spec.size <= int(params.data.max)",
		MessageExpression: "'size ' + string(object.spec.size) + ' is over ' + params.data.max"}
	deny := ptr(registration.DenyAction)
	allow := ptr(registration.AllowAction)
	const prefix = `widgets.example.com "w1" is forbidden: `
	for _, tc := range []struct {
		name     string
		pol      *registration.ValidatingAdmissionPolicy
		ref      *registration.ParamRef
		actions  []registration.ValidationAction
		a        *admission.Attributes
		want     string // the denial's message, "" for none
		warnings []string
	}{
		{name: "by name, passes", ref: &registration.ParamRef{Name: "limits"}, a: attrs(10, nil)},
		{name: "by name, denies", ref: &registration.ParamRef{Name: "limits"}, a: attrs(11, nil),
			want: prefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: size 11 is over 10"},
		{name: "by name in paramRef's namespace", ref: &registration.ParamRef{Name: "limits", Namespace: "other"}, a: attrs(3, nil),
			want: prefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: size 3 is over 2"},
		{name: "by selector, one evaluation per param", ref: &registration.ParamRef{Selector: &meta.LabelSelector{MatchLabels: map[string]string{"limit": "yes"}}},
			actions: []registration.ValidationAction{registration.Warn}, a: attrs(12, nil), warnings: []string{
				"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': size 12 is over 10",
				"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': size 12 is over 5"}},
		{name: "missing, Deny", ref: &registration.ParamRef{Name: "nope", ParameterNotFoundAction: deny}, a: attrs(1, nil),
			want: prefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "missing, Deny refuses a Warn binding too", ref: &registration.ParamRef{Name: "nope", ParameterNotFoundAction: deny},
			actions: []registration.ValidationAction{registration.Warn}, a: attrs(1, nil),
			want: prefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "missing, Allow", ref: &registration.ParamRef{Name: "nope", ParameterNotFoundAction: allow}, a: attrs(100, nil)},
		{name: "selector selecting none, Deny", ref: &registration.ParamRef{Selector: &meta.LabelSelector{MatchLabels: map[string]string{"limit": "no"}}, ParameterNotFoundAction: deny},
			a: attrs(1, nil), want: prefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "no paramRef: params is null", pol: kindPolicy("v1", "ConfigMap", registration.Validation{Expression: "params == null"}), a: attrs(1, nil)},
		{name: "paramKind not served", pol: kindPolicy("example.com/v1", "Nope", limit), ref: &registration.ParamRef{Name: "x"}, a: attrs(1, nil),
			want: prefix + "ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'"},
		{name: "paramKind not served, Ignore", pol: func() *registration.ValidatingAdmissionPolicy {
			p := kindPolicy("example.com/v1", "Nope", limit)
			p.Spec.FailurePolicy = ptr(registration.Ignore)
			return p
		}(), ref: &registration.ParamRef{Name: "x"}, a: attrs(1, nil)},
		{name: "namespace for a cluster-scoped paramKind", pol: kindPolicy("example.com/v1", "Root", registration.Validation{Expression: "true"}),
			ref: &registration.ParamRef{Name: "r", Namespace: "default"}, a: attrs(1, nil),
			want: prefix + "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`"},
		{name: "cluster-scoped paramKind by name", pol: kindPolicy("example.com/v1", "Root", registration.Validation{Expression: "params.metadata.name == 'r'"}),
			ref: &registration.ParamRef{Name: "r"}, a: attrs(1, nil)},
		{name: "namespaced paramKind for a cluster-scoped write", ref: &registration.ParamRef{Name: "limits"}, a: func() *admission.Attributes {
			a := attrs(1, nil)
			a.Namespace = ""
			return a
		}(), want: `widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := tc.pol
			if pol == nil {
				pol = kindPolicy("v1", "ConfigMap", limit)
			}
			actions := tc.actions
			if actions == nil {
				actions = []registration.ValidationAction{registration.Deny}
			}
			b := newBinding("b", "p", actions...)
			if tc.ref != nil {
				b = withParamRef(b, *tc.ref)
			}
			p, _ := paramPlugin(t, s, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{b})
			var warnings []string
			ctx := admission.WithWarnings(context.Background(), func(m string) { warnings = append(warnings, m) })
			err := p.Validate(ctx, tc.a)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else {
				var se *meta.StatusError
				if !errors.As(err, &se) {
					t.Fatalf("got %v, want a Status", err)
				}
				if st := se.ErrStatus; st.Message != tc.want || st.Code != 422 || st.Reason != meta.StatusReasonInvalid {
					t.Errorf("got %d %s %q\nwant 422 Invalid %q", st.Code, st.Reason, st.Message, tc.want)
				}
			}
			if strings.Join(warnings, "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("warnings %q, want %q", warnings, tc.warnings)
			}
		})
	}
}

// TestParamInformers: an informer runs per paramKind while a bound
// policy names it; a kind served later is found within seconds; one no
// longer served is dropped.
func TestParamInformers(t *testing.T) {
	s := newServed(t, false)
	s.hideRoots.Store(true)
	pol := kindPolicy("example.com/v1", "Root", registration.Validation{Expression: "params.metadata.name == 'r'", Message: "not r"})
	b := withParamRef(newBinding("b", "p", registration.Deny), registration.ParamRef{Name: "r", ParameterNotFoundAction: ptr(registration.AllowAction)})
	p, src := paramPlugin(t, s, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{b})
	running := func() int {
		src.mu.Lock()
		defer src.mu.Unlock()
		return len(src.params.running)
	}
	if err := p.Validate(context.Background(), attrs(1, nil)); err == nil || !strings.Contains(err.Error(), "failed to find resource referenced by paramKind") {
		t.Fatalf("got %v", err)
	}
	s.hideRoots.Store(false)
	eventually(t, "the kind served later is found", func() error {
		if running() != 1 {
			return errors.New("no informer")
		}
		return p.Validate(context.Background(), attrs(1, nil))
	})
	s.hideRoots.Store(true)
	eventually(t, "the kind no longer served is dropped", func() error {
		if n := running(); n != 0 {
			return errors.New("informer still running")
		}
		return nil
	})
	s.hideRoots.Store(false)
	eventually(t, "served again", func() error {
		if running() != 1 {
			return errors.New("no informer")
		}
		return nil
	})
	src.SetBindings(nil)
	if n := running(); n != 0 {
		t.Errorf("%d informers with no binding", n)
	}
}

// eventually polls cond with a generous deadline (the machine may be
// loaded).
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNamespaceObject: the write's namespace as kube shows it (no
// managedFields), null for cluster-scoped writes and on a server without
// namespaces; a namespace not found refuses the write.
func TestNamespaceObject(t *testing.T) {
	s := newServed(t, true)
	if _, err := s.namespaces.Create(context.Background(), "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "default",
		Labels: map[string]string{"env": "prod"}}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	pol := newPolicy("p", registration.Validation{
		Expression: "namespaceObject == null || (namespaceObject.metadata.labels.env != 'prod' || object.spec.size < 10) && !has(namespaceObject.metadata.managedFields) && namespaceObject.status.phase == 'Active'",
		Message:    "prod widgets are small"})
	b := newBinding("b", "p", registration.Deny)
	p, _ := paramPlugin(t, s, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{b})
	if err := p.Validate(context.Background(), attrs(3, nil)); err != nil {
		t.Errorf("refused: %v", err)
	}
	if err := p.Validate(context.Background(), attrs(12, nil)); err == nil || !strings.Contains(err.Error(), "prod widgets are small") {
		t.Errorf("got %v", err)
	}
	clusterScoped := attrs(12, nil)
	clusterScoped.Namespace = ""
	if err := p.Validate(context.Background(), clusterScoped); err != nil {
		t.Errorf("cluster-scoped refused: %v", err)
	}
	missing := attrs(12, nil)
	missing.Namespace = "gone"
	if err := p.Validate(context.Background(), missing); !meta.IsNotFound(err) {
		t.Errorf("namespace not found: got %v", err)
	}
	noNS, _ := paramPlugin(t, newServed(t, false), []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{b})
	if err := noNS.Validate(context.Background(), attrs(12, nil)); err != nil {
		t.Errorf("without namespaces: %v", err)
	}
}
