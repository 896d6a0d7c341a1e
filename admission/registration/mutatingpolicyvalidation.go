package registration

import (
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
)

// Validation of MutatingAdmissionPolicy and its binding follows
// kube-apiserver 1.37's, message for message; the parts a
// ValidatingAdmissionPolicy shares (paramKind, matchConstraints,
// matchConditions, variables, paramRef) are its checks.

var supportedPatchTypes = []string{string(PatchTypeApplyConfiguration), string(PatchTypeJSONPatch)}

var mutationCompilers = sync.OnceValues(func() ([2]*cel.Compiler, error) {
	all := cel.AdmissionVariables()
	noParams := slices.DeleteFunc(slices.Clone(all), func(v cel.Variable) bool { return v.Name == cel.ParamsVarName })
	var out [2]*cel.Compiler
	var err error
	if out[0], err = cel.NewMutationCompiler(noParams...); err != nil {
		return out, err
	}
	out[1], err = cel.NewMutationCompiler(all...)
	return out, err
})

// MutationCompiler returns the compiler of a MutatingAdmissionPolicy's
// mutations: the policy's variables (params declared when hasParams) and
// the Object and JSONPatch types with jsonpatch.escapeKey.
func MutationCompiler(hasParams bool) (*cel.Compiler, error) {
	cs, err := mutationCompilers()
	if err != nil {
		return nil, err
	}
	if hasParams {
		return cs[1], nil
	}
	return cs[0], nil
}

// ValidateMutatingPolicy validates a MutatingAdmissionPolicy.
func ValidateMutatingPolicy(pol *MutatingAdmissionPolicy) meta.FieldErrors {
	return validateMutatingPolicySpec(&pol.Spec, false, meta.NewPath("spec"))
}

// ValidateMutatingPolicyUpdate validates an update; unchanged
// matchConditions are not compiled again, as kube-apiserver does.
func ValidateMutatingPolicyUpdate(pol, old *MutatingAdmissionPolicy) meta.FieldErrors {
	same := slices.Equal(pol.Spec.MatchConditions, old.Spec.MatchConditions)
	return validateMutatingPolicySpec(&pol.Spec, same, meta.NewPath("spec"))
}

func validateMutatingPolicySpec(spec *MutatingAdmissionPolicySpec, ignoreMatchConditions bool, p *meta.Path) meta.FieldErrors {
	common := policyCommon{spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints, spec.MatchConditions, spec.Variables}
	errs, c := common.validate(ignoreMatchConditions, p)
	if c == nil {
		return errs
	}
	hasParams := spec.ParamKind != nil
	mc, err := MutationCompiler(hasParams)
	if err != nil {
		return append(errs, meta.InternalFieldError(p, err))
	}
	if len(spec.Mutations) == 0 {
		errs = append(errs, meta.Required(p.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range spec.Mutations {
		errs = append(errs, validateMutation(mc, &spec.Mutations[i], p.Child("mutations").Index(i))...)
	}
	if spec.ReinvocationPolicy == "" {
		errs = append(errs, meta.Required(p.Child("reinvocationPolicy"), ""))
	} else if !slices.Contains(supportedReinvocationPolicies, string(spec.ReinvocationPolicy)) {
		errs = append(errs, meta.NotSupported(p.Child("reinvocationPolicy"), spec.ReinvocationPolicy, supportedReinvocationPolicies))
	}
	return errs
}

// validateMutation checks that the patch type's own field, and only it, is
// set, and compiles its expression to what that patch type needs.
func validateMutation(c *cel.Compiler, m *Mutation, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	expression := func(field, expr string, want *types.Type) {
		ep := p.Child(field, "expression")
		if strings.TrimSpace(expr) == "" {
			errs = append(errs, meta.Required(ep, ""))
			return
		}
		errs = append(errs, compileInto(c, expr, want, ep)...)
	}
	switch m.PatchType {
	case PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, meta.Required(p.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else {
			expression("jsonPatch", m.JSONPatch.Expression, cel.JSONPatchListType)
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, meta.Invalid(p.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, meta.Required(p.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else {
			expression("applyConfiguration", m.ApplyConfiguration.Expression, cel.ApplyConfigurationType)
		}
		if m.JSONPatch != nil {
			errs = append(errs, meta.Invalid(p.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	case "":
		errs = append(errs, meta.Required(p.Child("patchType"), ""))
	default:
		errs = append(errs, meta.NotSupported(p.Child("patchType"), m.PatchType, supportedPatchTypes))
	}
	return errs
}

// ValidateMutatingBinding validates a MutatingAdmissionPolicyBinding
// (create and update alike, as kube-apiserver does).
func ValidateMutatingBinding(b *MutatingAdmissionPolicyBinding) meta.FieldErrors {
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
	return append(errs, validateMatchResources(b.Spec.MatchResources, p.Child("matchResources"))...)
}

// SetMutatingPolicyDefaults fills what kube-apiserver's v1 defaulting
// fills: failurePolicy Fail and the MatchResources' defaults (the
// reinvocationPolicy has none: it is required).
func SetMutatingPolicyDefaults(pol *MutatingAdmissionPolicy) {
	if pol.Spec.FailurePolicy == nil {
		pol.Spec.FailurePolicy = ptr(Fail)
	}
	setMatchResourcesDefaults(pol.Spec.MatchConstraints)
}

// SetMutatingBindingDefaults fills what kube-apiserver's v1 defaulting
// fills.
func SetMutatingBindingDefaults(b *MutatingAdmissionPolicyBinding) {
	setMatchResourcesDefaults(b.Spec.MatchResources)
	if r := b.Spec.ParamRef; r != nil && r.ParameterNotFoundAction == nil {
		r.ParameterNotFoundAction = ptr(DenyAction)
	}
}
