package registration

import (
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
)

// Validation of ValidatingAdmissionPolicy and its binding follows
// kube-apiserver's pkg/apis/admissionregistration/validation, message for
// message. Expressions are compiled with package cel; as in kube, a
// policy's static cost estimate is not held against a limit at creation
// (kube reports it in status.typeChecking at most): evaluations are held
// to cel.PerCallLimit and the request's budget at run time.

var (
	supportedValidationActions = []string{string(Audit), string(Deny), string(Warn)}
	supportedPolicyReasons     = []string{string(meta.StatusReasonForbidden), string(meta.StatusReasonInvalid), "RequestEntityTooLarge", "Unauthorized"}
	supportedNotFoundActions   = []string{string(AllowAction), string(DenyAction)}
)

// policyCompilers are the compilers of a policy's expressions, with and
// without params (declared only when the policy has a paramKind), and of
// its messageExpressions, which see no authorizer.
type policyCompilers struct {
	withParams, noParams               *cel.Compiler
	messageWithParams, messageNoParams *cel.Compiler
}

var policyCompiler = sync.OnceValues(func() (*policyCompilers, error) {
	all := cel.AdmissionVariables()
	without := func(names ...string) []cel.Variable {
		return slices.DeleteFunc(slices.Clone(all), func(v cel.Variable) bool { return slices.Contains(names, v.Name) })
	}
	var pc policyCompilers
	var err error
	for _, c := range []struct {
		to   **cel.Compiler
		vars []cel.Variable
	}{
		{&pc.withParams, all},
		{&pc.noParams, without(cel.ParamsVarName)},
		{&pc.messageWithParams, without(cel.AuthorizerVarName, cel.RequestResourceVarName)},
		{&pc.messageNoParams, without(cel.ParamsVarName, cel.AuthorizerVarName, cel.RequestResourceVarName)},
	} {
		if *c.to, err = cel.NewCompiler(c.vars...); err != nil {
			return nil, err
		}
	}
	return &pc, nil
})

// PolicyCompiler returns the compiler of a ValidatingAdmissionPolicy's
// validations, variables, matchConditions and audit annotations (params
// declared when hasParams), or of its messageExpressions (no authorizer).
func PolicyCompiler(hasParams, message bool) (*cel.Compiler, error) {
	pc, err := policyCompiler()
	if err != nil {
		return nil, err
	}
	switch {
	case message && hasParams:
		return pc.messageWithParams, nil
	case message:
		return pc.messageNoParams, nil
	case hasParams:
		return pc.withParams, nil
	}
	return pc.noParams, nil
}

// compileInto reports an expression that does not compile to want (nil:
// any type) as kube does: Invalid with the compiler's detail.
func compileInto(c *cel.Compiler, expr string, want *types.Type, p *meta.Path) meta.FieldErrors {
	if _, err := c.Compile(expr, want); err != nil {
		var ce *cel.CompileError
		if errors.As(err, &ce) {
			// kube's admission compiler says only what the type must be.
			detail, _, _ := strings.Cut(ce.Detail, " but got ")
			return meta.FieldErrors{meta.Invalid(p, expr, detail)}
		}
		return meta.FieldErrors{meta.InternalFieldError(p, err)}
	}
	return nil
}

// policyCommon is what ValidatingAdmissionPolicy and MutatingAdmissionPolicy
// specs share and validate alike.
type policyCommon struct {
	failurePolicy    *FailurePolicyType
	paramKind        *ParamKind
	matchConstraints *MatchResources
	matchConditions  []MatchCondition
	variables        []Variable
}

// validate checks failurePolicy, paramKind, matchConstraints (whose resource
// rules give the expressions their types), matchConditions (unless
// ignoreMatchConditions: an update that keeps them) and variables, and
// returns the compiler of the policy's expressions, nil when it could not
// be built (an internal error, in errs).
func (pc policyCommon) validate(ignoreMatchConditions bool, p *meta.Path) (meta.FieldErrors, *cel.Compiler) {
	var errs meta.FieldErrors
	if pc.failurePolicy == nil {
		errs = append(errs, meta.Required(p.Child("failurePolicy"), ""))
	} else if !slices.Contains(supportedFailurePolicies, string(*pc.failurePolicy)) {
		errs = append(errs, meta.NotSupported(p.Child("failurePolicy"), *pc.failurePolicy, supportedFailurePolicies))
	}
	hasParams := pc.paramKind != nil
	if hasParams {
		errs = append(errs, validateParamKind(pc.paramKind, p.Child("paramKind"))...)
	}
	if pc.matchConstraints == nil {
		errs = append(errs, meta.Required(p.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(pc.matchConstraints, p.Child("matchConstraints"))...)
		if len(pc.matchConstraints.ResourceRules) == 0 {
			errs = append(errs, meta.Required(p.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	c, cerrs := policyCompilerFor(hasParams, false, p)
	if cerrs != nil {
		return append(errs, cerrs...), nil
	}
	if !ignoreMatchConditions {
		errs = append(errs, validateMatchConditionsWith(pc.matchConditions, p.Child("matchConditions"), func(expr string, ep *meta.Path) meta.FieldErrors {
			return compileInto(c, expr, types.BoolType, ep)
		})...)
	}
	return append(errs, validateVariables(c, pc.variables, p.Child("variables"))...), c
}

func policyCompilerFor(hasParams, message bool, p *meta.Path) (*cel.Compiler, meta.FieldErrors) {
	c, err := PolicyCompiler(hasParams, message)
	if err != nil {
		return nil, meta.FieldErrors{meta.InternalFieldError(p, err)}
	}
	return c, nil
}

// ValidatePolicy validates a ValidatingAdmissionPolicy.
func ValidatePolicy(pol *ValidatingAdmissionPolicy) meta.FieldErrors {
	return validatePolicySpec(pol.Name, &pol.Spec, false, meta.NewPath("spec"))
}

// ValidatePolicyUpdate validates an update; unchanged matchConditions
// are not compiled again, as kube-apiserver does.
func ValidatePolicyUpdate(pol, old *ValidatingAdmissionPolicy) meta.FieldErrors {
	same := slices.Equal(pol.Spec.MatchConditions, old.Spec.MatchConditions)
	return validatePolicySpec(pol.Name, &pol.Spec, same, meta.NewPath("spec"))
}

func validatePolicySpec(name string, spec *ValidatingAdmissionPolicySpec, ignoreMatchConditions bool, p *meta.Path) meta.FieldErrors {
	common := policyCommon{spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints, spec.MatchConditions, spec.Variables}
	errs, c := common.validate(ignoreMatchConditions, p)
	if c == nil {
		return errs
	}
	hasParams := spec.ParamKind != nil
	mc, cerrs := policyCompilerFor(hasParams, true, p)
	if cerrs != nil {
		return append(errs, cerrs...)
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const detail = "validations or auditAnnotations must contain at least one item"
		return append(errs, meta.Required(p.Child("validations"), detail), meta.Required(p.Child("auditAnnotations"), detail))
	}
	for i := range spec.Validations {
		errs = append(errs, validateValidation(c, mc, &spec.Validations[i], p.Child("validations").Index(i))...)
	}
	keys := map[string]bool{}
	for i, a := range spec.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		if keys[a.Key] {
			errs = append(errs, meta.Duplicate(ap.Child("key"), a.Key))
		}
		keys[a.Key] = true
		if name == "" {
			errs = append(errs, meta.Invalid(ap.Child("key"), a.Key, "requires metadata.name be non-empty"))
		} else {
			for _, msg := range meta.ValidateQualifiedName(name + "/" + a.Key) {
				errs = append(errs, meta.Invalid(ap.Child("key"), name+"/"+a.Key, msg))
			}
		}
		switch ve := strings.TrimSpace(a.ValueExpression); {
		case ve == "":
			errs = append(errs, meta.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		case len(ve) > 5*1024:
			errs = append(errs, meta.TooLong(ap.Child("valueExpression"), "", 5*1024))
		default:
			errs = append(errs, compileInto(c, a.ValueExpression, nil, ap.Child("valueExpression"))...)
		}
	}
	return errs
}

// validateVariables checks a policy's variables, each compiled by c.
func validateVariables(c *cel.Compiler, vars []Variable, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	for i, v := range vars {
		vp := p.Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, meta.Required(vp.Child("name"), "name is not specified"))
		} else if !isCELIdentifier(v.Name) {
			errs = append(errs, meta.Invalid(vp.Child("name"), v.Name, "name is not a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, meta.Required(vp.Child("expression"), "expression is not specified"))
		} else {
			errs = append(errs, compileInto(c, v.Expression, nil, vp.Child("expression"))...)
		}
	}
	return errs
}

func validateValidation(c, mc *cel.Compiler, v *Validation, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, meta.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, compileInto(c, v.Expression, types.BoolType, p.Child("expression"))...)
	}
	if len(v.MessageExpression) > 0 && strings.TrimSpace(v.MessageExpression) == "" {
		errs = append(errs, meta.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if strings.TrimSpace(v.MessageExpression) != "" {
		errs = append(errs, compileInto(mc, v.MessageExpression, types.StringType, p.Child("messageExpression"))...)
	}
	msg := strings.TrimSpace(v.Message)
	if len(v.Message) > 0 && msg == "" {
		errs = append(errs, meta.Invalid(p.Child("message"), v.Message, "message must be non-empty if specified"))
	} else if strings.ContainsAny(msg, "\n\r") {
		errs = append(errs, meta.Invalid(p.Child("message"), v.Message, "message must not contain line breaks"))
	}
	if v.Reason != nil && !slices.Contains(supportedPolicyReasons, string(*v.Reason)) {
		errs = append(errs, meta.NotSupported(p.Child("reason"), *v.Reason, supportedPolicyReasons))
	}
	return errs
}

// isCELIdentifier is kube's check of a variable name: a letter or _, then
// letters, digits and _.
func isCELIdentifier(s string) bool {
	for i, r := range s {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

func validateParamKind(k *ParamKind, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if k.APIVersion == "" {
		errs = append(errs, meta.Required(p.Child("apiVersion"), ""))
	} else if gv, err := meta.ParseGroupVersion(k.APIVersion); err != nil {
		errs = append(errs, meta.Invalid(p.Child("apiVersion"), k.APIVersion, err.Error()))
	} else {
		if gv.Group != "" {
			if msgs := meta.ValidateDNS1123Subdomain(gv.Group); len(msgs) > 0 {
				errs = append(errs, meta.Invalid(p.Child("apiVersion"), gv.Group, strings.Join(msgs, ",")))
			}
		}
		if gv.Version == "" {
			errs = append(errs, meta.Invalid(p.Child("apiVersion"), k.APIVersion, "version must be specified"))
		} else if msgs := meta.ValidateDNS1035Label(gv.Version); len(msgs) > 0 {
			errs = append(errs, meta.Invalid(p.Child("apiVersion"), gv.Version, strings.Join(msgs, ",")))
		}
	}
	if k.Kind == "" {
		errs = append(errs, meta.Required(p.Child("kind"), ""))
	} else if msgs := meta.ValidateDNS1035Label(strings.ToLower(k.Kind)); len(msgs) > 0 {
		errs = append(errs, meta.Invalid(p.Child("kind"), k.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// validateMatchResources checks in kube's order: matchPolicy,
// namespaceSelector, objectSelector, resourceRules, excludeResourceRules.
func validateMatchResources(m *MatchResources, p *meta.Path) meta.FieldErrors {
	if m == nil {
		return nil
	}
	var errs meta.FieldErrors
	if m.MatchPolicy == nil {
		errs = append(errs, meta.Required(p.Child("matchPolicy"), ""))
	} else if !slices.Contains(supportedMatchPolicies, string(*m.MatchPolicy)) {
		errs = append(errs, meta.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, supportedMatchPolicies))
	}
	if m.NamespaceSelector == nil {
		errs = append(errs, meta.Required(p.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, validateLabelSelector(m.NamespaceSelector, false, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		errs = append(errs, meta.Required(p.Child("objectSelector"), ""))
	} else {
		errs = append(errs, validateLabelSelector(m.ObjectSelector, false, p.Child("objectSelector"))...)
	}
	for i := range m.ResourceRules {
		errs = append(errs, validateNamedRule(&m.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&m.ExcludeResourceRules[i], p.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(r *NamedRuleWithOperations, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	seen := map[string]bool{}
	for i, n := range r.ResourceNames {
		for _, msg := range meta.ValidatePathSegmentName(n, false) {
			errs = append(errs, meta.Invalid(p.Child("resourceNames").Index(i), n, msg))
		}
		if seen[n] {
			errs = append(errs, meta.Duplicate(p.Child("resourceNames").Index(i), n))
		}
		seen[n] = true
	}
	return append(errs, validateRuleWithOperations(&r.RuleWithOperations, p)...)
}

// ValidateBinding validates a ValidatingAdmissionPolicyBinding (create
// and update alike, as kube-apiserver does).
func ValidateBinding(b *ValidatingAdmissionPolicyBinding) meta.FieldErrors {
	p := meta.NewPath("spec")
	var errs meta.FieldErrors
	if b.Spec.PolicyName == "" {
		errs = append(errs, meta.Required(p.Child("policyName"), ""))
	} else {
		for _, msg := range meta.ValidateDNS1123Subdomain(b.Spec.PolicyName) {
			errs = append(errs, meta.Invalid(p.Child("policyName"), b.Spec.PolicyName, msg))
		}
	}
	errs = append(errs, validateParamRef(b.Spec.ParamRef, p.Child("paramRef"))...)
	// kube's field path is spelled so.
	errs = append(errs, validateMatchResources(b.Spec.MatchResources, p.Child("matchResouces"))...)
	return append(errs, validateValidationActions(b.Spec.ValidationActions, p.Child("validationActions"))...)
}

func validateParamRef(r *ParamRef, p *meta.Path) meta.FieldErrors {
	if r == nil {
		return nil
	}
	var errs meta.FieldErrors
	const exclusive = "name and selector are mutually exclusive"
	if r.Name != "" {
		for _, msg := range meta.ValidatePathSegmentName(r.Name, false) {
			errs = append(errs, meta.Invalid(p.Child("name"), r.Name, msg))
		}
		if r.Selector != nil {
			errs = append(errs, meta.Forbidden(p.Child("name"), exclusive))
		}
	}
	if r.Selector != nil {
		errs = append(errs, validateLabelSelector(r.Selector, false, p.Child("selector"))...)
		if r.Name != "" {
			errs = append(errs, meta.Forbidden(p.Child("selector"), exclusive))
		}
	}
	if r.Name == "" && r.Selector == nil {
		errs = append(errs, meta.Required(p, "one of name or selector must be specified"))
	}
	if r.ParameterNotFoundAction == nil || *r.ParameterNotFoundAction == "" {
		errs = append(errs, meta.Required(p.Child("parameterNotFoundAction"), ""))
	} else if !slices.Contains(supportedNotFoundActions, string(*r.ParameterNotFoundAction)) {
		errs = append(errs, meta.NotSupported(p.Child("parameterNotFoundAction"), *r.ParameterNotFoundAction, supportedNotFoundActions))
	}
	return errs
}

func validateValidationActions(actions []ValidationAction, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	seen := map[ValidationAction]bool{}
	for i, a := range actions {
		if !slices.Contains(supportedValidationActions, string(a)) {
			errs = append(errs, meta.NotSupported(p.Index(i), a, supportedValidationActions))
		}
		if seen[a] {
			errs = append(errs, meta.Duplicate(p.Index(i), a))
		}
		seen[a] = true
	}
	if seen[Deny] && seen[Warn] {
		errs = append(errs, meta.Invalid(p, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		errs = append(errs, meta.Required(p, "at least one validation action is required"))
	}
	return errs
}

// SetPolicyDefaults fills what kube-apiserver's v1 defaulting fills.
func SetPolicyDefaults(pol *ValidatingAdmissionPolicy) {
	if pol.Spec.FailurePolicy == nil {
		pol.Spec.FailurePolicy = ptr(Fail)
	}
	setMatchResourcesDefaults(pol.Spec.MatchConstraints)
}

// SetBindingDefaults fills what kube-apiserver's v1 defaulting fills.
func SetBindingDefaults(b *ValidatingAdmissionPolicyBinding) {
	setMatchResourcesDefaults(b.Spec.MatchResources)
	if r := b.Spec.ParamRef; r != nil && r.ParameterNotFoundAction == nil {
		r.ParameterNotFoundAction = ptr(DenyAction)
	}
}

func setMatchResourcesDefaults(m *MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr(Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &meta.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &meta.LabelSelector{}
	}
	for _, rs := range [][]NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rs {
			if rs[i].Scope == nil {
				rs[i].Scope = ptr(AllScopes)
			}
		}
	}
}
