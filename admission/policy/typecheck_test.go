package policy

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/admission/policyset/policysettest"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// configMapPolicy returns a policy on configmaps with the validations.
func configMapPolicy(paramKind *registration.ParamKind, rules []registration.NamedRuleWithOperations, vs ...registration.Validation) *registration.ValidatingAdmissionPolicy {
	p := newParamPolicy("p", paramKind, vs...)
	p.Spec.MatchConstraints.ResourceRules = rules
	return p
}

func rule(groups, versions, resources []string) []registration.NamedRuleWithOperations {
	return []registration.NamedRuleWithOperations{{RuleWithOperations: registration.RuleWithOperations{
		Operations: []registration.OperationType{registration.Create},
		Rule:       registration.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}}}}
}

// schemaed is a custom resource's version: its schema is its own.
type schemaed struct {
	registry.Resource
	s *schema.Schema
}

func (r schemaed) Schema() *schema.Schema { return r.s }

// withWidgets serves example.com/v1 widgets with a CRD-like schema.
type withWidgets struct{ *policysettest.Served }

func (w withWidgets) ResourceOf(gvr meta.GroupVersionResource) (registry.Resource, bool) {
	if gvr == widgets {
		return schemaed{Resource: registry.Serve(w.Roots), s: &schema.Schema{Type: "object", Properties: []schema.Property{
			{Name: "spec", Schema: &schema.Schema{Type: "object", Properties: []schema.Property{{Name: "size", Schema: &schema.Schema{Type: "integer"}}}}},
		}}}, true
	}
	return w.Served.ResourceOf(gvr)
}

// TestTypeCheck holds the type checking to kube's: the matched kinds'
// schemas (reflected from Go types, or a custom resource's own), params
// typed by the paramKind's, namespaceObject as kube's Namespace, one
// line per kind, wildcards skipped.
func TestTypeCheck(t *testing.T) {
	rs := withWidgets{policysettest.New(t, false)}
	cms := rule([]string{""}, []string{"v1"}, []string{"configmaps"})
	cmKind := &registration.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	for _, tc := range []struct {
		name  string
		pol   *registration.ValidatingAdmissionPolicy
		wantW []registration.ExpressionWarning
	}{
		{"well typed", configMapPolicy(nil, cms, registration.Validation{Expression: "object.data.x == 'a' && object.metadata.name != '' && namespaceObject.metadata.UID != ''",
			MessageExpression: "object.metadata.name"}), nil},
		{"unknown field", configMapPolicy(nil, cms, registration.Validation{Expression: "object.nope == 1"}), []registration.ExpressionWarning{{
			FieldRef: "spec.validations[0].expression",
			Warning:  "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'nope'\n | object.nope == 1\n | ......^\n"}}},
		{"messageExpression and namespaceObject", configMapPolicy(nil, cms, registration.Validation{Expression: "true", MessageExpression: "namespaceObject.metadata.uid"}),
			[]registration.ExpressionWarning{{FieldRef: "spec.validations[0].messageExpression",
				Warning: "/v1, Kind=ConfigMap: ERROR: <input>:1:25: undefined field 'uid'\n | namespaceObject.metadata.uid\n | ........................^\n"}}},
		{"params typed", configMapPolicy(cmKind, cms, registration.Validation{Expression: "params.datum == object.data"}),
			[]registration.ExpressionWarning{{FieldRef: "spec.validations[0].expression",
				Warning: "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'datum'\n | params.datum == object.data\n | ......^\n"}}},
		{"two kinds, one line each", configMapPolicy(nil, append(cms, rule([]string{"example.com"}, []string{"v1"}, []string{"widgets"})...),
			registration.Validation{Expression: "object.spec.size > 0"}),
			[]registration.ExpressionWarning{{FieldRef: "spec.validations[0].expression",
				Warning: "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n | object.spec.size > 0\n | ......^\n"}}},
		{"custom resource schema", configMapPolicy(nil, rule([]string{"example.com"}, []string{"v1"}, []string{"widgets"}),
			registration.Validation{Expression: "object.spec.size == 'big'"}),
			[]registration.ExpressionWarning{{FieldRef: "spec.validations[0].expression",
				Warning: "example.com/v1, Kind=Root: ERROR: <input>:1:18: found no matching overload for '_==_' applied to '(int, string)'\n | object.spec.size == 'big'\n | .................^\n"}}},
		{"wildcards are not checked", configMapPolicy(nil, rule([]string{"*"}, []string{"v1"}, []string{"configmaps"}), registration.Validation{Expression: "object.nope == 1"}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TypeCheck(tc.pol, rs)
			if len(got) != len(tc.wantW) {
				t.Fatalf("got %q, want %q", got, tc.wantW)
			}
			for i := range got {
				if got[i] != tc.wantW[i] {
					t.Errorf("got %q\nwant %q", got[i], tc.wantW[i])
				}
			}
		})
	}
}

// TestTypeCheckingStatus: Run writes each generation's warnings to the
// policy's status through /status, with observedGeneration.
func TestTypeCheckingStatus(t *testing.T) {
	s := policysettest.New(t, false)
	mem := memory.New(memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	stores, err := registration.NewPolicyStores(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	src := NewSource()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); src.Run(ctx, stores, s, slog.Default()) }()
	t.Cleanup(func() { cancel(); <-done })

	pol := configMapPolicy(nil, rule([]string{""}, []string{"v1"}, []string{"configmaps"}), registration.Validation{Expression: "object.nope == 1"})
	pol.UID, pol.Generation = "", 0
	if _, err := stores.Policies.Create(ctx, "", pol, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	status := func(gen int64, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, _, err := stores.Policies.Get(ctx, "", "p", meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := got.Status
			w := ""
			if st.TypeChecking != nil && len(st.TypeChecking.ExpressionWarnings) > 0 {
				w = st.TypeChecking.ExpressionWarnings[0].FieldRef + " " + st.TypeChecking.ExpressionWarnings[0].Warning
			}
			if got.Generation == gen && st.ObservedGeneration == gen && st.TypeChecking != nil && w == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("status %+v (generation %d), want generation %d and warning %q", st, got.Generation, gen, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	status(1, "spec.validations[0].expression /v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'nope'\n | object.nope == 1\n | ......^\n")
	if _, _, err := stores.Policies.Update(ctx, "", "p", func(_ context.Context, cur *registration.ValidatingAdmissionPolicy) (*registration.ValidatingAdmissionPolicy, error) {
		cur.Spec.Validations[0].Expression = "object.data.x == 'a'"
		return cur, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	status(2, "")
}
