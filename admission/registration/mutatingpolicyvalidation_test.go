package registration

import (
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

// validMutatingPolicy returns a defaulted policy that passes validation.
func validMutatingPolicy() *MutatingAdmissionPolicy {
	p := &MutatingAdmissionPolicy{ObjectMeta: meta.ObjectMeta{Name: "label-flunders"}, Spec: MutatingAdmissionPolicySpec{
		MatchConstraints: &MatchResources{ResourceRules: []NamedRuleWithOperations{{RuleWithOperations: RuleWithOperations{
			Operations: []OperationType{Create, Update},
			Rule:       Rule{APIGroups: []string{"wardle.example.com"}, APIVersions: []string{"*"}, Resources: []string{"flunders"}}}}}},
		Mutations: []Mutation{{PatchType: PatchTypeApplyConfiguration, ApplyConfiguration: &ApplyConfiguration{
			Expression: `Object{metadata: Object.metadata{labels: {"team": "blue"}}}`}}},
		ReinvocationPolicy: NeverReinvocationPolicy,
	}}
	SetMutatingPolicyDefaults(p)
	return p
}

// TestValidateMutatingPolicyMessages holds MutatingAdmissionPolicy
// validation to kube-apiserver's messages and field paths.
func TestValidateMutatingPolicyMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*MutatingAdmissionPolicy)
		want   []string
	}{{
		name:   "valid",
		change: func(*MutatingAdmissionPolicy) {},
	}, {
		name: "json patch valid",
		change: func(p *MutatingAdmissionPolicy) {
			p.Spec.Mutations = []Mutation{{PatchType: PatchTypeJSONPatch, JSONPatch: &JSONPatch{
				Expression: `[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b"), value: "x"}]`}}}
		},
	}, {
		name: "required fields",
		change: func(p *MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints = nil
			p.Spec.Mutations = nil
			p.Spec.ReinvocationPolicy = ""
		},
		want: []string{
			`spec.matchConstraints: Required value`,
			`spec.mutations: Required value: mutations must contain at least one item`,
			`spec.reinvocationPolicy: Required value`,
		},
	}, {
		name: "unsupported values",
		change: func(p *MutatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr(FailurePolicyType("Maybe"))
			p.Spec.ReinvocationPolicy = "Always"
			p.Spec.Mutations[0].PatchType = "MergePatch"
		},
		want: []string{
			`spec.failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"`,
			`spec.mutations[0].patchType: Unsupported value: "MergePatch": supported values: "ApplyConfiguration", "JSONPatch"`,
			`spec.reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`,
		},
	}, {
		name: "patch type's field missing, the other's set",
		change: func(p *MutatingAdmissionPolicy) {
			p.Spec.Mutations = []Mutation{
				{PatchType: PatchTypeJSONPatch, ApplyConfiguration: &ApplyConfiguration{Expression: "Object{}"}},
				{PatchType: PatchTypeApplyConfiguration, JSONPatch: &JSONPatch{Expression: "[]"}},
				{PatchType: PatchTypeApplyConfiguration, ApplyConfiguration: &ApplyConfiguration{Expression: " "}},
			}
		},
		want: []string{
			`spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch`,
			`spec.mutations[0].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified when patchType is JSONPatch`,
			`spec.mutations[1].applyConfiguration: Required value: must be specified when patchType is ApplyConfiguration`,
			`spec.mutations[1].jsonPatch: Invalid value: "{jsonPatch}": must not be specified when patchType is ApplyConfiguration`,
			`spec.mutations[2].applyConfiguration.expression: Required value`,
		},
	}, {
		name: "expressions of the wrong type or not compiling",
		change: func(p *MutatingAdmissionPolicy) {
			p.Spec.Mutations = []Mutation{
				{PatchType: PatchTypeApplyConfiguration, ApplyConfiguration: &ApplyConfiguration{Expression: `[JSONPatch{op: "remove", path: "/spec"}]`}},
				{PatchType: PatchTypeJSONPatch, JSONPatch: &JSONPatch{Expression: `Object{}`}},
				{PatchType: PatchTypeJSONPatch, JSONPatch: &JSONPatch{Expression: `[JSONPatch{op: "add", pth: "/spec"}]`}},
				{PatchType: PatchTypeJSONPatch, JSONPatch: &JSONPatch{Expression: `[JSONPatch{op: "add", path: params.p}]`}},
			}
		},
		want: []string{
			`spec.mutations[0].applyConfiguration.expression: Invalid value: "[JSONPatch{op: \"remove\", path: \"/spec\"}]": must evaluate to Object`,
			`spec.mutations[1].jsonPatch.expression: Invalid value: "Object{}": must evaluate to list(JSONPatch)`,
			`spec.mutations[2].jsonPatch.expression: Invalid value: "[JSONPatch{op: \"add\", pth: \"/spec\"}]": compilation failed: ERROR: <input>:1:26: undefined field 'pth'`,
			`spec.mutations[3].jsonPatch.expression: Invalid value: "[JSONPatch{op: \"add\", path: params.p}]": compilation failed: ERROR: <input>:1:29: undeclared reference to 'params'`,
		},
	}, {
		name: "params with a paramKind",
		change: func(p *MutatingAdmissionPolicy) {
			p.Spec.ParamKind = &ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Mutations = []Mutation{{PatchType: PatchTypeJSONPatch, JSONPatch: &JSONPatch{Expression: `[JSONPatch{op: "add", path: params.data.p}]`}}}
		},
	}, {
		name: "variables and matchConditions",
		change: func(p *MutatingAdmissionPolicy) {
			p.Spec.Variables = []Variable{{Name: "1x", Expression: "object.nope("}}
			p.Spec.MatchConditions = []MatchCondition{{Name: "m", Expression: "'x'"}}
		},
		want: []string{
			`spec.matchConditions[0].expression: Invalid value: "'x'": must evaluate to bool`,
			`spec.variables[0].name: Invalid value: "1x": name is not a valid CEL identifier`,
			`spec.variables[0].expression: Invalid value: "object.nope(": compilation failed:`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := validMutatingPolicy()
			tc.change(p)
			checkErrors(t, ValidateMutatingPolicy(p), tc.want)
		})
	}
}

// TestValidateMutatingBindingMessages: the binding's own checks, its
// matchResources under their real name.
func TestValidateMutatingBindingMessages(t *testing.T) {
	b := &MutatingAdmissionPolicyBinding{ObjectMeta: meta.ObjectMeta{Name: "b"}, Spec: MutatingAdmissionPolicyBindingSpec{
		PolicyName: "Not_A_Name", ParamRef: &ParamRef{},
		MatchResources: &MatchResources{MatchPolicy: ptr(MatchPolicyType("Sometimes"))}}}
	SetMutatingBindingDefaults(b)
	checkErrors(t, ValidateMutatingBinding(b), []string{
		`spec.policyName: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain`,
		`spec.paramRef: Required value: one of name or selector must be specified`,
		`spec.matchResources.matchPolicy: Unsupported value: "Sometimes": supported values: "Equivalent", "Exact"`,
	})
	ok := &MutatingAdmissionPolicyBinding{ObjectMeta: meta.ObjectMeta{Name: "b"}, Spec: MutatingAdmissionPolicyBindingSpec{PolicyName: "p"}}
	checkErrors(t, ValidateMutatingBinding(ok), nil)
	if p := validMutatingPolicy(); *p.Spec.FailurePolicy != Fail || *p.Spec.MatchConstraints.MatchPolicy != Equivalent {
		t.Errorf("defaults: %+v", p.Spec)
	}
}
