package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
)

// widget is the object the tests admit.
type widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		Size int `json:"size"`
	} `json:"spec"`
}

var widgets = meta.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func attrs(size int, labels map[string]string) *admission.Attributes {
	obj := &widget{ObjectMeta: meta.ObjectMeta{Name: "w1", Namespace: "default", Labels: labels}}
	obj.Spec.Size = size
	return &admission.Attributes{Operation: admission.Create, Kind: widgets.GroupVersion().WithKind("Widget"), Resource: widgets,
		Namespace: "default", Name: "w1", Object: obj, VersionedObject: obj,
		User: &authn.User{Name: "alice", Groups: []string{"dev"}}}
}

func ptr[T any](v T) *T { return &v }

// newPolicy returns a defaulted policy on widgets with the validations.
func newPolicy(name string, vs ...registration.Validation) *registration.ValidatingAdmissionPolicy {
	return newParamPolicy(name, nil, vs...)
}

// newParamPolicy returns a defaulted policy on widgets with the
// paramKind (nil: none) and validations.
func newParamPolicy(name string, paramKind *registration.ParamKind, vs ...registration.Validation) *registration.ValidatingAdmissionPolicy {
	p := &registration.ValidatingAdmissionPolicy{ObjectMeta: meta.ObjectMeta{Name: name, UID: name, Generation: 1},
		Spec: registration.ValidatingAdmissionPolicySpec{ParamKind: paramKind,
			MatchConstraints: &registration.MatchResources{ResourceRules: []registration.NamedRuleWithOperations{{
				RuleWithOperations: registration.RuleWithOperations{Operations: []registration.OperationType{registration.Create, registration.Update},
					Rule: registration.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}}},
			Validations: vs,
		}}
	registration.SetPolicyDefaults(p)
	if errs := registration.ValidatePolicy(p); len(errs) > 0 {
		panic(errs)
	}
	return p
}

func newBinding(name, policy string, actions ...registration.ValidationAction) *registration.ValidatingAdmissionPolicyBinding {
	return &registration.ValidatingAdmissionPolicyBinding{ObjectMeta: meta.ObjectMeta{Name: name},
		Spec: registration.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions}}
}

func newPlugin(t *testing.T, ps []*registration.ValidatingAdmissionPolicy, bs []*registration.ValidatingAdmissionPolicyBinding) *Plugin {
	t.Helper()
	src := NewSource()
	src.SetPolicies(ps)
	src.SetBindings(bs)
	p, err := New(Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDeny holds denials to kube-apiserver's Status: the message, the
// reason and its code, the cause.
func TestDeny(t *testing.T) {
	small := registration.Validation{Expression: "object.spec.size < 10", Message: "widgets must be small"}
	for _, tc := range []struct {
		name     string
		v        registration.Validation
		size     int
		wantCode int32
		wantMsg  string
		reason   meta.StatusReason
	}{
		{"passes", small, 3, 0, "", ""},
		{"message", small, 12, 422, `widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-b' denied request: widgets must be small`, meta.StatusReasonInvalid},
		{"no message", registration.Validation{Expression: " object.spec.size < 10 "}, 12, 422,
			`widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-b' denied request: failed expression: object.spec.size < 10`, meta.StatusReasonInvalid},
		{"messageExpression and reason", registration.Validation{Expression: "object.spec.size < 10", Message: "m",
			MessageExpression: "'size ' + string(object.spec.size) + ' is too big'", Reason: ptr(meta.StatusReasonForbidden)}, 12, 403,
			`widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-b' denied request: size 12 is too big`, meta.StatusReasonForbidden},
		{"messageExpression failing falls back", registration.Validation{Expression: "object.spec.size < 10", Message: "m",
			MessageExpression: "object.spec.nope", Reason: ptr(meta.StatusReason("RequestEntityTooLarge"))}, 12, 413,
			`widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-b' denied request: m`, "RequestEntityTooLarge"},
		{"evaluation error with Fail", registration.Validation{Expression: "object.spec.nope < 10"}, 3, 422,
			`widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-b' denied request: expression 'object.spec.nope < 10' resulted in error: no such key: nope`, meta.StatusReasonInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, []*registration.ValidatingAdmissionPolicy{newPolicy("small", tc.v)},
				[]*registration.ValidatingAdmissionPolicyBinding{newBinding("small-b", "small", registration.Deny)})
			err := p.Validate(context.Background(), attrs(tc.size, nil))
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *meta.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a Status", err)
			}
			st := se.ErrStatus
			if st.Code != tc.wantCode || st.Reason != tc.reason || st.Message != tc.wantMsg {
				t.Errorf("got %d %s %q\nwant %d %s %q", st.Code, st.Reason, st.Message, tc.wantCode, tc.reason, tc.wantMsg)
			}
			if st.Details == nil || len(st.Details.Causes) != 1 || !strings.HasPrefix(st.Details.Causes[0].Message, "ValidatingAdmissionPolicy 'small'") ||
				st.Details.Kind != "widgets" || st.Details.Group != "example.com" || st.Details.Name != "w1" {
				t.Errorf("details: %+v", st.Details)
			}
		})
	}
}

// TestActions: Warn gives a warning, Audit an annotation, neither
// refuses; failurePolicy Ignore lets errors pass.
func TestActions(t *testing.T) {
	pol := newPolicy("small", registration.Validation{Expression: "object.spec.size < 10", Message: "widgets must be small"})
	p := newPlugin(t, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{
		newBinding("warn", "small", registration.Warn), newBinding("audit", "small", registration.Audit)})
	var warnings []string
	rec := audit.NewRecorder(audit.Event{})
	ctx := audit.WithRecorder(admission.WithWarnings(context.Background(), func(m string) { warnings = append(warnings, m) }), rec)
	if err := p.Validate(ctx, attrs(12, nil)); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if want := "Validation failed for ValidatingAdmissionPolicy 'small' with binding 'warn': widgets must be small"; len(warnings) != 1 || warnings[0] != want {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	want := `[{"message":"widgets must be small","policy":"small","binding":"audit","expressionIndex":0,"validationActions":["Audit"]}]`
	if got := rec.Snapshot().Annotations[FailureAnnotation]; got != want {
		t.Errorf("audit annotation %s, want %s", got, want)
	}

	ignore := newPolicy("broken", registration.Validation{Expression: "object.spec.nope < 10"})
	ignore.Spec.FailurePolicy = ptr(registration.Ignore)
	p = newPlugin(t, []*registration.ValidatingAdmissionPolicy{ignore}, []*registration.ValidatingAdmissionPolicyBinding{newBinding("b", "broken", registration.Deny)})
	if err := p.Validate(context.Background(), attrs(3, nil)); err != nil {
		t.Errorf("failurePolicy Ignore refused: %v", err)
	}
}

// TestMatching: matchConstraints, the binding's matchResources,
// matchConditions, variables and the exempt admission resources.
func TestMatching(t *testing.T) {
	pol := newPolicy("small", registration.Validation{Expression: "variables.size < 10", Message: "small"})
	pol.Spec.Variables = []registration.Variable{{Name: "size", Expression: "object.spec.size"}}
	pol.Spec.MatchConditions = []registration.MatchCondition{{Name: "not-exempt", Expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}}
	b := newBinding("b", "small", registration.Deny)
	b.Spec.MatchResources = &registration.MatchResources{ObjectSelector: &meta.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
	registration.SetBindingDefaults(b)
	p := newPlugin(t, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{b, newBinding("orphan", "missing", registration.Deny)})
	for _, tc := range []struct {
		name   string
		a      *admission.Attributes
		denied bool
	}{
		{"matches", attrs(12, map[string]string{"env": "prod"}), true},
		{"binding's selector", attrs(12, map[string]string{"env": "dev"}), false},
		{"matchCondition false", attrs(12, map[string]string{"env": "prod", "exempt": "yes"}), false},
		{"small passes", attrs(3, map[string]string{"env": "prod"}), false},
		{"delete is not in the rules", func() *admission.Attributes {
			a := attrs(12, map[string]string{"env": "prod"})
			a.Operation, a.OldObject, a.Object = admission.Delete, a.Object, nil
			return a
		}(), false},
		{"other resource", func() *admission.Attributes {
			a := attrs(12, map[string]string{"env": "prod"})
			a.Resource.Resource = "gadgets"
			return a
		}(), false},
		{"admission resources are exempt", func() *admission.Attributes {
			a := attrs(12, map[string]string{"env": "prod"})
			a.Resource = meta.GroupVersionResource{Group: registration.GroupName, Version: "v1", Resource: "validatingadmissionpolicies"}
			return a
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tc.a)
			if (err != nil) != tc.denied {
				t.Errorf("denied: %v, want %v", err, tc.denied)
			}
		})
	}
}

// TestCompiledOncePerGeneration: an unchanged generation reuses the
// programs; a new one compiles again.
func TestCompiledOncePerGeneration(t *testing.T) {
	src := NewSource()
	pol := newPolicy("small", registration.Validation{Expression: "object.spec.size < 10"})
	src.SetPolicies([]*registration.ValidatingAdmissionPolicy{pol})
	first := src.set.Current().Policies["small"].Compiled
	src.SetBindings(nil)
	if src.set.Current().Policies["small"].Compiled != first {
		t.Error("recompiled for a binding change")
	}
	next := *pol
	next.Generation = 2
	src.SetPolicies([]*registration.ValidatingAdmissionPolicy{&next})
	if src.set.Current().Policies["small"].Compiled == first {
		t.Error("not recompiled for a new generation")
	}
}

// TestNotSynced: a write before the first sync is refused after the
// timeout, as kube-apiserver's plugin refuses it.
func TestNotSynced(t *testing.T) {
	p, err := New(Config{Source: NewSource(), SyncTimeout: 10e6})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(context.Background(), attrs(3, nil)); !meta.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready to handle request") {
		t.Errorf("got %v", err)
	}
}

// TestAuditAnnotations: a string value is published under
// <policy>/<key>, null is not; an error with failurePolicy Fail refuses.
func TestAuditAnnotations(t *testing.T) {
	pol := newPolicy("sized", registration.Validation{Expression: "true"})
	pol.Spec.AuditAnnotations = []registration.AuditAnnotation{
		{Key: "size", ValueExpression: "'size ' + string(object.spec.size)"},
		{Key: "none", ValueExpression: "null"},
	}
	p := newPlugin(t, []*registration.ValidatingAdmissionPolicy{pol}, []*registration.ValidatingAdmissionPolicyBinding{newBinding("b", "sized", registration.Deny)})
	rec := audit.NewRecorder(audit.Event{})
	if err := p.Validate(audit.WithRecorder(context.Background(), rec), attrs(12, nil)); err != nil {
		t.Fatalf("refused: %v", err)
	}
	got := rec.Snapshot().Annotations
	if got["sized/size"] != "size 12" || len(got) != 1 {
		t.Errorf("annotations %v", got)
	}

	broken := newPolicy("broken", registration.Validation{Expression: "true"})
	broken.Spec.AuditAnnotations = []registration.AuditAnnotation{{Key: "x", ValueExpression: "object.spec.nope"}}
	p = newPlugin(t, []*registration.ValidatingAdmissionPolicy{broken}, []*registration.ValidatingAdmissionPolicyBinding{newBinding("b", "broken", registration.Deny)})
	if err := p.Validate(context.Background(), attrs(3, nil)); err == nil ||
		!strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'broken' with binding 'b' denied request: expression 'object.spec.nope' resulted in error: no such key: nope") {
		t.Errorf("got %v", err)
	}
}
