package mutatingpolicy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/apikit-dev/apikit/admission/policyset/policysettest"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
)

// paramPlugin returns a plugin of pol, bound with ref (nil: none), that
// reads params from s until the test ends.
func paramPlugin(t *testing.T, s *policysettest.Served, pol *registration.MutatingAdmissionPolicy, ref *registration.ParamRef) *Plugin {
	t.Helper()
	return paramPluginOf(t, s, []*registration.MutatingAdmissionPolicy{pol}, paramBinding(t, pol.Name+"-b", pol.Name, ref))
}

// paramPluginOf returns a plugin of the policies and bindings that reads
// params from s until the test ends.
func paramPluginOf(t *testing.T, s *policysettest.Served, ps []*registration.MutatingAdmissionPolicy, bs ...*registration.MutatingAdmissionPolicyBinding) *Plugin {
	t.Helper()
	src := NewSource()
	src.SetPolicies(ps)
	src.SetBindings(bs)
	ctx, cancel := context.WithCancel(context.Background())
	wait := src.WatchParams(ctx, s, nil)
	t.Cleanup(func() { cancel(); wait() })
	p, err := New(Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// paramBinding returns a defaulted, valid binding with ref (nil: none).
func paramBinding(t *testing.T, name, policy string, ref *registration.ParamRef) *registration.MutatingAdmissionPolicyBinding {
	t.Helper()
	b := newBinding(name, policy)
	b.Spec.ParamRef = ref
	registration.SetMutatingBindingDefaults(b)
	if errs := registration.ValidateMutatingBinding(b); len(errs) > 0 {
		t.Fatal(errs)
	}
	return b
}

func withParamKind(apiVersion, kind string) func(*registration.MutatingAdmissionPolicySpec) {
	return func(s *registration.MutatingAdmissionPolicySpec) {
		s.ParamKind = &registration.ParamKind{APIVersion: apiVersion, Kind: kind}
	}
}

// TestParams holds MutatingAdmissionPolicy's params to kube-apiserver's:
// params in mutations, matchConditions and variables; one run per param
// the binding's paramRef selects; parameterNotFoundAction; the
// configuration errors refusing the write (403 Forbidden) unless the
// failurePolicy is Ignore.
func TestParams(t *testing.T) {
	s := policysettest.New(t, false)
	s.ConfigMap(t, "default", "team", map[string]string{"kind": "team"}, map[string]string{"name": "blue", "on": "yes"})
	s.ConfigMap(t, "default", "owner", map[string]string{"kind": "team"}, map[string]string{"name": "alice", "on": "no"})
	s.ConfigMap(t, "other", "team", nil, map[string]string{"name": "green", "on": "yes"})
	cm := withParamKind("v1", "ConfigMap")
	// Each run labels the object with the param's name and data.name.
	byName := jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/" + params.metadata.name, value: params.data.name}]`)
	deny, allow := registration.DenyAction, registration.AllowAction
	teams := &meta.LabelSelector{MatchLabels: map[string]string{"kind": "team"}}
	for _, tc := range []struct {
		name   string
		edit   func(*registration.MutatingAdmissionPolicySpec)
		m      registration.Mutation
		ref    *registration.ParamRef
		labels map[string]string // the object's labels after admission
		err    string            // the refusal's message, "" for none
	}{
		{name: "by name, apply configuration", edit: cm, ref: &registration.ParamRef{Name: "team"},
			m:      applyConfiguration(`Object{metadata: Object.metadata{labels: {"team": params.data.name}}}`),
			labels: map[string]string{"app": "x", "team": "blue"}},
		{name: "by name, json patch", edit: cm, ref: &registration.ParamRef{Name: "team"}, m: byName,
			labels: map[string]string{"app": "x", "team": "blue"}},
		{name: "by name in paramRef's namespace", edit: cm, ref: &registration.ParamRef{Name: "team", Namespace: "other"}, m: byName,
			labels: map[string]string{"app": "x", "team": "green"}},
		{name: "by selector, one run per param", edit: cm, ref: &registration.ParamRef{Selector: teams}, m: byName,
			labels: map[string]string{"app": "x", "team": "blue", "owner": "alice"}},
		{name: "matchConditions read params", edit: func(s *registration.MutatingAdmissionPolicySpec) {
			cm(s)
			s.MatchConditions = []registration.MatchCondition{{Name: "on", Expression: `params.data.on == "yes"`}}
		}, ref: &registration.ParamRef{Selector: teams}, m: byName, labels: map[string]string{"app": "x", "team": "blue"}},
		{name: "variables read params", edit: func(s *registration.MutatingAdmissionPolicySpec) {
			cm(s)
			s.Variables = []registration.Variable{{Name: "who", Expression: `params.data.name + "-" + object.metadata.labels.app`}}
		}, ref: &registration.ParamRef{Name: "owner"},
			m:      jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/who", value: variables.who}]`),
			labels: map[string]string{"app": "x", "who": "alice-x"}},
		{name: "no paramRef: params is null", edit: cm,
			m:      jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/p", value: params == null ? "null" : "set"}]`),
			labels: map[string]string{"app": "x", "p": "null"}},
		{name: "missing, Allow", edit: cm, ref: &registration.ParamRef{Name: "nope", ParameterNotFoundAction: &allow}, m: byName,
			labels: map[string]string{"app": "x"}},
		{name: "missing, Deny", edit: cm, ref: &registration.ParamRef{Name: "nope", ParameterNotFoundAction: &deny}, m: byName,
			err: "policy 'p' with binding 'p-b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "paramKind not served", edit: withParamKind("example.com/v1", "Nope"), ref: &registration.ParamRef{Name: "x"}, m: byName,
			err: `policy "p" denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'`},
		{name: "paramKind not served, Ignore", edit: func(s *registration.MutatingAdmissionPolicySpec) {
			withParamKind("example.com/v1", "Nope")(s)
			s.FailurePolicy = ptr(registration.Ignore)
		}, ref: &registration.ParamRef{Name: "x"}, m: byName, labels: map[string]string{"app": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := paramPlugin(t, s, newPolicy(t, "p", tc.edit, tc.m), tc.ref)
			a := attrs(t, map[string]string{"app": "x"})
			err := p.Admit(context.Background(), a)
			if tc.err != "" {
				var se *meta.StatusError
				if !errors.As(err, &se) {
					t.Fatalf("got %v, want a Status", err)
				}
				if st := se.ErrStatus; st.Code != 403 || st.Reason != meta.StatusReasonForbidden || st.Message != tc.err ||
					st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != tc.err {
					t.Errorf("got %d %s %q %+v\nwant 403 Forbidden %q", st.Code, st.Reason, st.Message, st.Details, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := a.Object.(*widget).Labels; !maps.Equal(got, tc.labels) {
				t.Errorf("labels %v, want %v", got, tc.labels)
			}
		})
	}
}

// TestParamChanged: a write after the param object changed sees its new
// value.
func TestParamChanged(t *testing.T) {
	s := policysettest.New(t, false)
	s.ConfigMap(t, "default", "team", nil, map[string]string{"name": "blue"})
	p := paramPlugin(t, s, newPolicy(t, "p", withParamKind("v1", "ConfigMap"),
		applyConfiguration(`Object{metadata: Object.metadata{labels: {"team": params.data.name}}}`)), &registration.ParamRef{Name: "team"})
	label := func() error {
		a := attrs(t, nil)
		if err := p.Admit(context.Background(), a); err != nil {
			return err
		}
		if got := a.Object.(*widget).Labels["team"]; got != "red" {
			return fmt.Errorf("team %q, want red", got)
		}
		return nil
	}
	if err := label(); err == nil || err.Error() != `team "blue", want red` {
		t.Fatalf("before the change: %v", err)
	}
	s.SetConfigMapData(t, "default", "team", map[string]string{"name": "red"})
	policysettest.Eventually(t, "the new value", label)
}

// TestReinvocationPerParam: each param's run of a policy with
// reinvocationPolicy IfNeeded is one invocation, run again when a later
// policy changes the object.
func TestReinvocationPerParam(t *testing.T) {
	s := policysettest.New(t, false)
	s.ConfigMap(t, "default", "a", map[string]string{"kind": "count"}, nil)
	s.ConfigMap(t, "default", "b", map[string]string{"kind": "count"}, nil)
	first := newPolicy(t, "a", func(spec *registration.MutatingAdmissionPolicySpec) {
		withParamKind("v1", "ConfigMap")(spec)
		spec.ReinvocationPolicy = registration.IfNeededReinvocationPolicy
	}, jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/count-" + params.metadata.name, value: string(size(object.metadata.labels))}]`))
	second := newPolicy(t, "b", nil, applyConfiguration(`Object{metadata: Object.metadata{labels: {"z-added": "yes"}}}`))
	counted := &registration.ParamRef{Selector: &meta.LabelSelector{MatchLabels: map[string]string{"kind": "count"}}}
	p := paramPluginOf(t, s, []*registration.MutatingAdmissionPolicy{first, second},
		paramBinding(t, "a-b", "a", counted), paramBinding(t, "b-b", "b", nil))
	a := attrs(t, map[string]string{"app": "x"})
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	// First round: a counts {app} = 1, b counts {app, count-a} = 2; then
	// z-added; the second round counts 4 for both.
	want := map[string]string{"app": "x", "count-a": "4", "count-b": "4", "z-added": "yes"}
	if got := a.Object.(*widget).Labels; !maps.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}
