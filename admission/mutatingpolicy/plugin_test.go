package mutatingpolicy

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policyset/policysettest"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// widget is the object the tests admit.
type widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            widgetSpec `json:"spec"`
}

type widgetSpec struct {
	Size  int64    `json:"size"`
	Color string   `json:"color,omitempty"`
	Tags  []string `json:"tags,omitempty" listType:"atomic"`
	Ports []port   `json:"ports,omitempty" listType:"map" listMapKeys:"name"`
}

type port struct {
	Name string `json:"name"`
	Port int64  `json:"port,omitempty"`
}

var widgets = meta.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func attrs(t testing.TB, labels map[string]string) *admission.Attributes {
	t.Helper()
	obj := &widget{ObjectMeta: meta.ObjectMeta{Name: "w1", Namespace: "default", Labels: labels}}
	obj.Spec.Size = 3
	obj.Spec.Ports = []port{{Name: "http", Port: 80}}
	set := schema.NewSet()
	shape, err := set.AddType(reflect.TypeOf(obj))
	if err != nil {
		t.Fatal(err)
	}
	return &admission.Attributes{Operation: admission.Create, Kind: widgets.GroupVersion().WithKind("Widget"), Resource: widgets,
		Namespace: "default", Name: "w1", Object: obj, VersionedObject: obj,
		User: &authn.User{Name: "alice", Groups: []string{"dev"}}, Schemas: set, Schema: shape}
}

func ptr[T any](v T) *T { return &v }

func applyConfiguration(expr string) registration.Mutation {
	return registration.Mutation{PatchType: registration.PatchTypeApplyConfiguration, ApplyConfiguration: &registration.ApplyConfiguration{Expression: expr}}
}

func jsonPatch(expr string) registration.Mutation {
	return registration.Mutation{PatchType: registration.PatchTypeJSONPatch, JSONPatch: &registration.JSONPatch{Expression: expr}}
}

// newPolicy returns a defaulted, valid policy on widgets.
func newPolicy(t testing.TB, name string, edit func(*registration.MutatingAdmissionPolicySpec), ms ...registration.Mutation) *registration.MutatingAdmissionPolicy {
	t.Helper()
	p := &registration.MutatingAdmissionPolicy{ObjectMeta: meta.ObjectMeta{Name: name, UID: name, Generation: 1},
		Spec: registration.MutatingAdmissionPolicySpec{
			MatchConstraints: &registration.MatchResources{ResourceRules: []registration.NamedRuleWithOperations{{
				RuleWithOperations: registration.RuleWithOperations{Operations: []registration.OperationType{registration.Create, registration.Update},
					Rule: registration.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}}},
			Mutations:          ms,
			ReinvocationPolicy: registration.NeverReinvocationPolicy,
		}}
	if edit != nil {
		edit(&p.Spec)
	}
	registration.SetMutatingPolicyDefaults(p)
	if errs := registration.ValidateMutatingPolicy(p); len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}

func newBinding(name, policy string) *registration.MutatingAdmissionPolicyBinding {
	return &registration.MutatingAdmissionPolicyBinding{ObjectMeta: meta.ObjectMeta{Name: name},
		Spec: registration.MutatingAdmissionPolicyBindingSpec{PolicyName: policy}}
}

func newPlugin(t testing.TB, ps ...*registration.MutatingAdmissionPolicy) *Plugin {
	t.Helper()
	src := NewSource()
	src.SetPolicies(ps)
	var bs []*registration.MutatingAdmissionPolicyBinding
	for _, p := range ps {
		bs = append(bs, newBinding(p.Name+"-b", p.Name))
	}
	src.SetBindings(bs)
	p, err := New(Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMutations: apply configurations merged by the schema, JSON patches
// applied, each seeing the one before; what they leave alone kept.
func TestMutations(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mutations []registration.Mutation
		labels    map[string]string
		wantSpec  widgetSpec
	}{
		{"apply configuration adds a label", []registration.Mutation{applyConfiguration(
			`Object{metadata: Object.metadata{labels: {"team": "blue"}}}`)},
			map[string]string{"app": "x", "team": "blue"}, widgetSpec{Size: 3, Ports: []port{{Name: "http", Port: 80}}}},
		{"apply configuration merges a map list by key", []registration.Mutation{applyConfiguration(
			`Object{spec: Object.spec{color: "red", ports: [Object.spec.ports{name: "https", port: 443}, Object.spec.ports{name: "http", port: 8080}]}}`)},
			map[string]string{"app": "x"}, widgetSpec{Size: 3, Color: "red", Ports: []port{{Name: "https", Port: 443}, {Name: "http", Port: 8080}}}},
		{"json patch with an escaped key", []registration.Mutation{jsonPatch(
			`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/owner~x"), value: object.metadata.name},
			  JSONPatch{op: "replace", path: "/spec/size", value: object.spec.size * 2}]`)},
			map[string]string{"app": "x", "example.com/owner~x": "w1"}, widgetSpec{Size: 6, Ports: []port{{Name: "http", Port: 80}}}},
		{"json patch value an Object", []registration.Mutation{jsonPatch(
			`[JSONPatch{op: "add", path: "/spec/ports/-", value: Object.spec.ports{name: "metrics", port: 9090}}]`)},
			map[string]string{"app": "x"}, widgetSpec{Size: 3, Ports: []port{{Name: "http", Port: 80}, {Name: "metrics", Port: 9090}}}},
		{"failed test leaves the object", []registration.Mutation{jsonPatch(
			`[JSONPatch{op: "test", path: "/spec/size", value: 100}, JSONPatch{op: "replace", path: "/spec/size", value: 1}]`)},
			map[string]string{"app": "x"}, widgetSpec{Size: 3, Ports: []port{{Name: "http", Port: 80}}}},
		{"second mutation sees the first", []registration.Mutation{
			applyConfiguration(`Object{spec: Object.spec{color: "green"}}`),
			jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/color", value: object.spec.color}]`)},
			map[string]string{"app": "x", "color": "green"}, widgetSpec{Size: 3, Color: "green", Ports: []port{{Name: "http", Port: 80}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, newPolicy(t, "p", nil, tc.mutations...))
			a := attrs(t, map[string]string{"app": "x"})
			if err := p.Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			got := a.Object.(*widget)
			if !maps.Equal(got.Labels, tc.labels) || !reflect.DeepEqual(got.Spec, tc.wantSpec) {
				t.Errorf("got labels %v spec %+v\nwant %v %+v", got.Labels, got.Spec, tc.labels, tc.wantSpec)
			}
			if a.VersionedObject != a.Object {
				t.Error("VersionedObject does not show the mutation")
			}
		})
	}
}

// costly costs about 800,000 on a 1,000,000-byte spec.color (200,000 a
// split), a little under kube's per-call limit, yet runs in milliseconds.
var costly = strings.TrimSuffix(strings.Repeat("size(object.spec.color.split('b')) + ", 4), " + ")

// TestFailures holds failed mutations to kube-apiserver's Status and the
// failurePolicy.
func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutation registration.Mutation
		ignore   bool
		wantMsg  string
		// variables a, b, ... each costing about 800,000 (and no
		// variable but a long spec.color with -1).
		costlyVariables int
	}{
		{"atomic list", applyConfiguration(`Object{spec: Object.spec{tags: ["a"]}}`), false,
			"policy 'p' with binding 'p-b' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.tags", 0},
		{"type name not its place", applyConfiguration(`Object{spec: Object.spec.wrong{color: "x"}}`), false,
			`policy 'p' with binding 'p-b' denied request: type mismatch: unexpected type name "Object.spec.wrong", expected "Object.spec", which matches field name path from root Object type`, 0},
		{"evaluation error", jsonPatch(`[JSONPatch{op: "add", path: "/spec/color", value: object.spec.nope}]`), false,
			`policy 'p' with binding 'p-b' denied request: expression '[JSONPatch{op: "add", path: "/spec/color", value: object.spec.nope}]' resulted in error: no such key: nope`, 0},
		{"bad path", jsonPatch(`[JSONPatch{op: "remove", path: "/spec/nothing/here"}]`), false,
			"policy 'p' with binding 'p-b' denied request: JSONPath: ", 0},
		// Each mutation's budget is 10,000,000; variables spend it too.
		{"budget", jsonPatch(`[JSONPatch{op: "add", path: "/spec/color", value: string(variables.a + variables.b + variables.c + variables.d + variables.e + variables.f + variables.g + variables.h + variables.i + variables.j + variables.k + variables.l + variables.m)}]`), false,
			"validation failed due to running out of cost budget, no further validation rules will be run", 13},
		// kube's per-call limit, 1,000,000.
		{"runtime cost", jsonPatch(`[JSONPatch{op: "add", path: "/spec/color", value: string(` + costly + " + " + costly + `)}]`), false,
			"resulted in error: operation cancelled: actual cost limit exceeded", -1},
		{"ignored", applyConfiguration(`Object{spec: Object.spec{tags: ["a"]}}`), true, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := newPolicy(t, "p", func(s *registration.MutatingAdmissionPolicySpec) {
				if tc.ignore {
					s.FailurePolicy = ptr(registration.Ignore)
				}
				for i := range max(tc.costlyVariables, 0) {
					s.Variables = append(s.Variables, registration.Variable{Name: string(rune('a' + i)), Expression: costly})
				}
			}, tc.mutation)
			a := attrs(t, nil)
			if tc.costlyVariables != 0 {
				a.Object.(*widget).Spec.Color = strings.Repeat("a", 1000000)
			}
			err := newPlugin(t, pol).Admit(context.Background(), a)
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := a.Object.(*widget).Spec.Tags; got != nil {
					t.Errorf("ignored failure changed the object: %v", got)
				}
				return
			}
			var se *meta.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a Status", err)
			}
			st := se.ErrStatus
			if st.Code != 403 || st.Reason != meta.StatusReasonInvalid || !strings.Contains(st.Message, tc.wantMsg) {
				t.Errorf("got %d %s %q\nwant 403 Invalid %q", st.Code, st.Reason, st.Message, tc.wantMsg)
			}
			if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != st.Message || st.Details.Name != "w1" {
				t.Errorf("details: %+v", st.Details)
			}
		})
	}
}

// TestMatching: matchConditions, variables and the policy's and the
// binding's matchers decide which bindings run.
func TestMatching(t *testing.T) {
	label := jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/seen", value: variables.v}]`)
	withVar := func(s *registration.MutatingAdmissionPolicySpec) {
		s.Variables = []registration.Variable{{Name: "v", Expression: `"by-" + request.userInfo.username`}}
	}
	for _, tc := range []struct {
		name string
		edit func(*registration.MutatingAdmissionPolicySpec)
		want string
	}{
		{"variables", withVar, "by-alice"},
		{"matchCondition true", func(s *registration.MutatingAdmissionPolicySpec) {
			withVar(s)
			s.MatchConditions = []registration.MatchCondition{{Name: "mine", Expression: `object.metadata.labels.app == "x"`}}
		}, "by-alice"},
		{"matchCondition false", func(s *registration.MutatingAdmissionPolicySpec) {
			withVar(s)
			s.MatchConditions = []registration.MatchCondition{{Name: "mine", Expression: `object.metadata.labels.app == "y"`}}
		}, ""},
		{"excluded", func(s *registration.MutatingAdmissionPolicySpec) {
			withVar(s)
			s.MatchConstraints.ExcludeResourceRules = s.MatchConstraints.ResourceRules
		}, ""},
		{"object selector", func(s *registration.MutatingAdmissionPolicySpec) {
			withVar(s)
			s.MatchConstraints.ObjectSelector = &meta.LabelSelector{MatchLabels: map[string]string{"app": "z"}}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := attrs(t, map[string]string{"app": "x"})
			if err := newPlugin(t, newPolicy(t, "p", tc.edit, label)).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if got := a.Object.(*widget).Labels["seen"]; got != tc.want {
				t.Errorf("seen = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReinvocation: a policy with reinvocationPolicy IfNeeded that ran
// before a later one changed the object runs once more; Never does not.
func TestReinvocation(t *testing.T) {
	count := jsonPatch(`[JSONPatch{op: "add", path: "/metadata/labels/count", value: string(size(object.metadata.labels))}]`)
	later := applyConfiguration(`Object{metadata: Object.metadata{labels: {"z-added": "yes"}}}`)
	for _, tc := range []struct {
		policy registration.ReinvocationPolicyType
		want   string
	}{
		// app, count (counted before itself), z-added: a second run counts 3.
		{registration.IfNeededReinvocationPolicy, "3"},
		{registration.NeverReinvocationPolicy, "1"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			first := newPolicy(t, "a", func(s *registration.MutatingAdmissionPolicySpec) { s.ReinvocationPolicy = tc.policy }, count)
			second := newPolicy(t, "b", nil, later)
			a := attrs(t, map[string]string{"app": "x"})
			if err := newPlugin(t, first, second).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if got := a.Object.(*widget).Labels; got["count"] != tc.want || got["z-added"] != "yes" {
				t.Errorf("labels %v, want count %s", got, tc.want)
			}
		})
	}
}

// TestExempt: writes to the admission configuration itself and deletes
// are never mutated.
func TestExempt(t *testing.T) {
	p := newPlugin(t, newPolicy(t, "p", nil, applyConfiguration(`Object{spec: Object.spec{color: "red"}}`)))
	if p.Handles(admission.Delete) || !p.Handles(admission.Update) {
		t.Error("Handles")
	}
	a := attrs(t, nil)
	a.Resource = meta.GroupVersionResource{Group: registration.GroupName, Version: "v1", Resource: "mutatingadmissionpolicies"}
	if err := p.Admit(context.Background(), a); err != nil || a.Object.(*widget).Spec.Color != "" {
		t.Errorf("admission configuration mutated: %v", err)
	}
}

// TestNamespaceObject: mutations read the write's namespace; a namespace
// that cannot be read refuses the write.
func TestNamespaceObject(t *testing.T) {
	s := policysettest.New(t, true)
	s.Namespace(t, "default", map[string]string{"env": "prod"})
	p := newPlugin(t, newPolicy(t, "p", nil, jsonPatch(
		`[JSONPatch{op: "add", path: "/metadata/labels/env", value: namespaceObject == null ? "none" : namespaceObject.metadata.labels.env}]`)))
	ctx, cancel := context.WithCancel(context.Background())
	wait := p.cfg.Source.WatchParams(ctx, s, nil)
	t.Cleanup(func() { cancel(); wait() })
	a := attrs(t, map[string]string{"app": "x"})
	if err := p.Admit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := a.Object.(*widget).Labels["env"]; got != "prod" {
		t.Errorf("env = %q, want the namespace's prod", got)
	}
	cluster := attrs(t, map[string]string{"app": "x"})
	cluster.Namespace = ""
	if err := p.Admit(ctx, cluster); err != nil || cluster.Object.(*widget).Labels["env"] != "none" {
		t.Errorf("cluster-scoped: %v %v", err, cluster.Object.(*widget).Labels)
	}
	gone := attrs(t, map[string]string{"app": "x"})
	gone.Namespace = "gone"
	if err := p.Admit(ctx, gone); err == nil || !strings.Contains(err.Error(), `namespaces "gone" not found`) {
		t.Errorf("a namespace not found: %v", err)
	}
}
