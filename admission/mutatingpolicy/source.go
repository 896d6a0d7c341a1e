package mutatingpolicy

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
)

type mutation struct {
	patchType registration.PatchType
	expr      *cel.Expression
}

// compiled is one generation of a policy, its expressions compiled.
type compiled struct {
	failOpen bool
	reinvoke bool
	// Expressions are the matchConditions and variables.
	policyset.Expressions
	mutations []mutation
	// err is a policy that does not compile (stored before a server that
	// refuses it, or by another version): its failurePolicy decides.
	err error
}

func compile(p *registration.MutatingAdmissionPolicy) *compiled {
	c := &compiled{
		failOpen: p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == registration.Ignore,
		reinvoke: p.Spec.ReinvocationPolicy == registration.IfNeededReinvocationPolicy}
	hasParams := p.Spec.ParamKind != nil
	var err error
	if _, c.Expressions, err = policyset.CompileExpressions(hasParams, p.Spec.MatchConditions, p.Spec.Variables); err != nil {
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

// The policy set of this kind and its parts.
type (
	set   = policyset.Source[*registration.MutatingAdmissionPolicy, *registration.MutatingAdmissionPolicyBinding, *compiled]
	hook  = policyset.Hook[*registration.MutatingAdmissionPolicy, *compiled]
	bound = policyset.Bound[*registration.MutatingAdmissionPolicyBinding]
)

// Source holds the MutatingAdmissionPolicies and bindings in effect
// (package admission/policyset's Source): Run keeps it equal to the
// stored ones; SetPolicies and SetBindings set it directly (a server
// without storage, a test). A policy is compiled once per generation.
type Source struct{ set *set }

// NewSource returns a Source that has not synced.
func NewSource() *Source {
	return &Source{set: policyset.NewSource[*registration.MutatingAdmissionPolicy, *registration.MutatingAdmissionPolicyBinding](compile)}
}

// Synced closes once the Source holds both policies and bindings.
func (s *Source) Synced() <-chan struct{} { return s.set.Synced() }

// SetPolicies replaces the policies.
func (s *Source) SetPolicies(ps []*registration.MutatingAdmissionPolicy) { s.set.SetPolicies(ps) }

// SetBindings replaces the bindings.
func (s *Source) SetBindings(bs []*registration.MutatingAdmissionPolicyBinding) {
	s.set.SetBindings(bs)
}

// WatchParams reads params and namespaces from resources until ctx ends
// (policyset.Source.WatchParams); wait blocks until it has stopped. Run
// calls it; call it alone for a Source kept by SetPolicies and
// SetBindings.
func (s *Source) WatchParams(ctx context.Context, resources policyset.Resources, log *slog.Logger) (wait func()) {
	return s.set.WatchParams(ctx, resources, log)
}

// Run keeps s equal to the policies and bindings in stores until ctx
// ends: an informer per kind, each change applied at once. The params of
// bound policies with a paramKind and the namespaces namespaceObject
// shows are read from rs (nil: neither).
func (s *Source) Run(ctx context.Context, stores *registration.MutatingPolicyStores, rs policyset.Resources, log *slog.Logger) {
	s.set.Run(ctx, policyset.Stores[*registration.MutatingAdmissionPolicy, *registration.MutatingAdmissionPolicyBinding]{
		Policies: stores.Policies, PolicyResource: "mutatingadmissionpolicies",
		Bindings: stores.Bindings, BindingResource: "mutatingadmissionpolicybindings",
	}, rs, log)
}
