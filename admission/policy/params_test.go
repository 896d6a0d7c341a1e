package policy

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policyset/policysettest"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// paramPlugin returns a plugin whose Source reads params from s until
// the test ends.
func paramPlugin(t *testing.T, s *policysettest.Served, ps []*registration.ValidatingAdmissionPolicy, bs []*registration.ValidatingAdmissionPolicyBinding) (*Plugin, *Source) {
	t.Helper()
	src := NewSource()
	src.SetPolicies(ps)
	src.SetBindings(bs)
	ctx, cancel := context.WithCancel(context.Background())
	wait := src.WatchParams(ctx, s, slog.Default())
	t.Cleanup(func() { cancel(); wait() })
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
	s := policysettest.New(t, false)
	s.ConfigMap(t, "default", "limits", nil, map[string]string{"max": "10"})
	s.ConfigMap(t, "other", "limits", nil, map[string]string{"max": "2"})
	s.ConfigMap(t, "default", "a", map[string]string{"limit": "yes"}, map[string]string{"max": "10"})
	s.ConfigMap(t, "default", "b", map[string]string{"limit": "yes"}, map[string]string{"max": "5"})
	if _, err := s.Roots.Create(context.Background(), "", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{Name: "r"}}, registry.WriteOptions{}); err != nil {
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

// TestNamespaceObject: the write's namespace as kube shows it (no
// managedFields), null for cluster-scoped writes and on a server without
// namespaces; a namespace not found refuses the write.
func TestNamespaceObject(t *testing.T) {
	s := policysettest.New(t, true)
	s.Namespace(t, "default", map[string]string{"env": "prod"})
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
	noNS, _ := paramPlugin(t, policysettest.New(t, false), []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{b})
	if err := noNS.Validate(context.Background(), attrs(12, nil)); err != nil {
		t.Errorf("without namespaces: %v", err)
	}
}
