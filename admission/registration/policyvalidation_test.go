package registration

import (
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

// validPolicy returns a defaulted policy that passes validation.
func validPolicy() *ValidatingAdmissionPolicy {
	p := &ValidatingAdmissionPolicy{ObjectMeta: meta.ObjectMeta{Name: "no-evil"}, Spec: ValidatingAdmissionPolicySpec{
		MatchConstraints: &MatchResources{ResourceRules: []NamedRuleWithOperations{{RuleWithOperations: RuleWithOperations{
			Operations: []OperationType{Create, Update},
			Rule:       Rule{APIGroups: []string{"wardle.example.com"}, APIVersions: []string{"*"}, Resources: []string{"flunders"}}}}}},
		Validations: []Validation{{Expression: "object.metadata.name != 'evil'", Message: "no evil flunders"}},
	}}
	SetPolicyDefaults(p)
	return p
}

// TestValidatePolicyMessages holds policy validation to kube-apiserver's
// messages and field paths.
func TestValidatePolicyMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*ValidatingAdmissionPolicy)
		want   []string
	}{{
		name:   "valid",
		change: func(*ValidatingAdmissionPolicy) {},
	}, {
		name: "matchConstraints required",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints = nil
		},
		want: []string{`spec.matchConstraints: Required value`},
	}, {
		name: "resourceRules required",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = nil
		},
		want: []string{`spec.matchConstraints.resourceRules: Required value`},
	}, {
		name: "failurePolicy",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = ptr(FailurePolicyType("Maybe"))
		},
		want: []string{`spec.failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"`},
	}, {
		name: "validations or auditAnnotations",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.Validations = nil
		},
		want: []string{
			`spec.validations: Required value: validations or auditAnnotations must contain at least one item`,
			`spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item`,
		},
	}, {
		name: "expression does not compile",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.x =="
		},
		want: []string{`spec.validations[0].expression: Invalid value: "object.x ==": compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>' expecting`},
	}, {
		name: "expression not a bool",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "1 + 1"
		},
		want: []string{`spec.validations[0].expression: Invalid value: "1 + 1": must evaluate to bool`},
	}, {
		name: "params only with a paramKind",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.n <= params.max"
		},
		want: []string{`spec.validations[0].expression: Invalid value: "object.spec.n <= params.max": compilation failed: ERROR: <input>:1:18: undeclared reference to 'params'`},
	}, {
		name: "params with a paramKind",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Validations[0].Expression = "object.spec.n <= params.max"
		},
	}, {
		name: "messageExpression, message and reason",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "42"
			p.Spec.Validations[0].Message = "two\nlines"
			p.Spec.Validations[0].Reason = ptr(meta.StatusReason("Gone"))
		},
		want: []string{
			`spec.validations[0].messageExpression: Invalid value: "42": must evaluate to string`,
			`spec.validations[0].message: Invalid value: "two\nlines": message must not contain line breaks`,
			`spec.validations[0].reason: Unsupported value: "Gone": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"`,
		},
	}, {
		name: "messageExpression has no authorizer",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "authorizer.path('/x').check('get').reason()"
		},
		want: []string{`spec.validations[0].messageExpression: Invalid value: "authorizer.path('/x').check('get').reason()": compilation failed: ERROR: <input>:1:1: undeclared reference to 'authorizer'`},
	}, {
		name: "variables and audit annotations",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.Variables = []Variable{{Name: "1x", Expression: "object"}, {Name: "ok", Expression: " "}}
			p.Spec.AuditAnnotations = []AuditAnnotation{{Key: "a", ValueExpression: "'x'"}, {Key: "a", ValueExpression: ""}}
		},
		want: []string{
			`spec.variables[0].name: Invalid value: "1x": name is not a valid CEL identifier`,
			`spec.variables[1].expression: Required value: expression is not specified`,
			`spec.auditAnnotations[1].key: Duplicate value: "a"`,
			`spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified`,
		},
	}, {
		name: "matchConditions see params only with a paramKind",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []MatchCondition{{Name: "m", Expression: "params.on"}}
		},
		want: []string{`spec.matchConditions[0].expression: Invalid value: "params.on": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'`},
	}, {
		name: "paramKind",
		change: func(p *ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &ParamKind{APIVersion: "example.com/", Kind: ""}
		},
		want: []string{
			`spec.paramKind.apiVersion: Invalid value: "example.com/": version must be specified`,
			`spec.paramKind.kind: Required value`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := validPolicy()
			tc.change(p)
			checkErrors(t, ValidatePolicy(p), tc.want)
		})
	}
}

// checkErrors compares errs with want, each a prefix of its error (the
// compiler's messages end in a caret drawing).
func checkErrors(t *testing.T, errs meta.FieldErrors, want []string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !slices.EqualFunc(got, want, strings.HasPrefix) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestValidateBindingMessages holds binding validation to
// kube-apiserver's messages and field paths.
func TestValidateBindingMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*ValidatingAdmissionPolicyBinding)
		want   []string
	}{{
		name:   "valid",
		change: func(*ValidatingAdmissionPolicyBinding) {},
	}, {
		name: "actions required",
		change: func(b *ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = nil
		},
		want: []string{`spec.validationActions: Required value: at least one validation action is required`},
	}, {
		name: "not Deny and Warn",
		change: func(b *ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []ValidationAction{Deny, Warn, Warn, "Log"}
		},
		want: []string{
			`spec.validationActions[2]: Duplicate value: "Warn"`,
			`spec.validationActions[3]: Unsupported value: "Log": supported values: "Audit", "Deny", "Warn"`,
			`spec.validationActions: Invalid value: ["Deny","Warn","Warn","Log"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)`,
		},
	}, {
		name: "policyName",
		change: func(b *ValidatingAdmissionPolicyBinding) {
			b.Spec.PolicyName = ""
		},
		want: []string{`spec.policyName: Required value`},
	}, {
		name: "matchResources keeps kube's spelling",
		change: func(b *ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &MatchResources{}
		},
		want: []string{
			`spec.matchResouces.matchPolicy: Required value`,
			`spec.matchResouces.namespaceSelector: Required value`,
			`spec.matchResouces.objectSelector: Required value`,
		},
	}, {
		name: "paramRef",
		change: func(b *ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &ParamRef{Name: "a/b", Selector: &meta.LabelSelector{}}
		},
		want: []string{
			`spec.paramRef.name: Invalid value: "a/b": may not contain '/'`,
			`spec.paramRef.name: Forbidden: name and selector are mutually exclusive`,
			`spec.paramRef.selector: Forbidden: name and selector are mutually exclusive`,
			`spec.paramRef.parameterNotFoundAction: Required value`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &ValidatingAdmissionPolicyBinding{ObjectMeta: meta.ObjectMeta{Name: "no-evil"},
				Spec: ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-evil", ValidationActions: []ValidationAction{Deny}}}
			tc.change(b)
			checkErrors(t, ValidateBinding(b), tc.want)
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	p := &ValidatingAdmissionPolicy{Spec: ValidatingAdmissionPolicySpec{MatchConstraints: &MatchResources{
		ResourceRules: []NamedRuleWithOperations{{}}}}}
	SetPolicyDefaults(p)
	m := p.Spec.MatchConstraints
	if *p.Spec.FailurePolicy != Fail || *m.MatchPolicy != Equivalent || m.NamespaceSelector == nil || m.ObjectSelector == nil ||
		*m.ResourceRules[0].Scope != AllScopes {
		t.Errorf("defaults: %+v %+v", p.Spec, m)
	}
	b := &ValidatingAdmissionPolicyBinding{Spec: ValidatingAdmissionPolicyBindingSpec{ParamRef: &ParamRef{Name: "x"}}}
	SetBindingDefaults(b)
	if *b.Spec.ParamRef.ParameterNotFoundAction != DenyAction {
		t.Errorf("binding defaults: %+v", b.Spec.ParamRef)
	}
}
