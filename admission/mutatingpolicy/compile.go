package mutatingpolicy

import (
	"fmt"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
)

type namedExpr struct {
	name string
	expr *cel.Expression
}

type mutation struct {
	patchType registration.PatchType
	expr      *cel.Expression
}

// compiled is one generation of a policy, its expressions compiled.
type compiled struct {
	policy          *registration.MutatingAdmissionPolicy
	failOpen        bool
	reinvoke        bool
	match           *matcher
	matchConditions []namedExpr
	variables       []namedExpr
	mutations       []mutation
	// err is a policy that does not compile (stored before a server that
	// refuses it, or by another version): its failurePolicy decides.
	err error
}

func compile(p *registration.MutatingAdmissionPolicy) *compiled {
	c := &compiled{policy: p,
		failOpen: p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == registration.Ignore,
		reinvoke: p.Spec.ReinvocationPolicy == registration.IfNeededReinvocationPolicy}
	if p.Spec.MatchConstraints != nil {
		c.match = newMatcher(p.Spec.MatchConstraints)
	}
	hasParams := p.Spec.ParamKind != nil
	comp, err := registration.PolicyCompiler(hasParams, false)
	if err != nil {
		c.err = err
		return c
	}
	mcomp, err := registration.MutationCompiler(hasParams)
	if err != nil {
		c.err = err
		return c
	}
	fail := func(what string, err error) *compiled {
		c.err = fmt.Errorf("%s: %w", what, err)
		return c
	}
	for _, mc := range p.Spec.MatchConditions {
		e, err := comp.Compile(mc.Expression, types.BoolType)
		if err != nil {
			return fail("compilation failed for match condition "+mc.Name, err)
		}
		c.matchConditions = append(c.matchConditions, namedExpr{mc.Name, e})
	}
	for _, v := range p.Spec.Variables {
		e, err := comp.Compile(v.Expression, nil)
		if err != nil {
			return fail("compilation failed for variable "+v.Name, err)
		}
		c.variables = append(c.variables, namedExpr{v.Name, e})
	}
	for i, m := range p.Spec.Mutations {
		var expr string
		var want *types.Type
		switch {
		case m.PatchType == registration.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			expr, want = m.ApplyConfiguration.Expression, cel.ApplyConfigurationType
		case m.PatchType == registration.PatchTypeJSONPatch && m.JSONPatch != nil:
			expr, want = m.JSONPatch.Expression, cel.JSONPatchListType
		default:
			return fail(fmt.Sprintf("mutation %d", i), fmt.Errorf("unsupported patchType %q", m.PatchType))
		}
		e, err := mcomp.Compile(expr, want)
		if err != nil {
			return fail(fmt.Sprintf("compilation failed for expression '%s'", expr), err)
		}
		c.mutations = append(c.mutations, mutation{patchType: m.PatchType, expr: e})
	}
	return c
}
