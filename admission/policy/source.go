package policy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
)

type validation struct {
	v       registration.Validation
	expr    *cel.Expression
	message *cel.Expression // nil without a messageExpression
}

// compiled is one generation of a policy, its expressions compiled.
type compiled struct {
	failOpen bool
	// Expressions are the matchConditions and variables.
	policyset.Expressions
	validations []validation
	// allPass is the validations joined by && (nil for fewer than two,
	// for validations asking the authorizer, whose checks a refused write
	// would repeat, or when that does not compile): true only when each of
	// them is true, at the sum of their costs (&& costs nothing in
	// cel-go's cost model), so the common write, one every validation lets
	// through, is one evaluation instead of one per validation (see
	// passes).
	allPass *cel.Expression
	// auditAnnotations are by key.
	auditAnnotations []policyset.NamedExpr
	// untracked: no expression's cost is tracked, as together they
	// cannot reach kube's limits (policyset.Untrack).
	untracked bool
	// err is a policy that does not compile (stored before a server that
	// refuses it, or by another version): its failurePolicy decides.
	err error
}

// compile compiles a policy's generation; its expressions are untracked
// when they cannot reach kube's cost limits (policyset.Untrack).
func compile(p *registration.ValidatingAdmissionPolicy) *compiled { return compileTracking(p, false) }

// compileTracking compiles p, its expressions' costs tracked whatever
// their bounds when track is set.
func compileTracking(p *registration.ValidatingAdmissionPolicy, track bool) *compiled {
	c := &compiled{failOpen: p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == registration.Ignore}
	hasParams := p.Spec.ParamKind != nil
	comp, exprs, err := policyset.CompileExpressions(hasParams, p.Spec.MatchConditions, p.Spec.Variables)
	c.Expressions = exprs
	if err != nil {
		c.err = err
		return c
	}
	msgComp, err := registration.PolicyCompiler(hasParams, true)
	if err != nil {
		c.err = err
		return c
	}
	fail := func(what string, err error) *compiled {
		c.err = fmt.Errorf("%s: %w", what, err)
		return c
	}
	for _, v := range p.Spec.Validations {
		e, err := comp.Compile(v.Expression, types.BoolType)
		if err != nil {
			return fail(fmt.Sprintf("compilation failed for expression '%s'", v.Expression), err)
		}
		cv := validation{v: v, expr: e}
		if v.MessageExpression != "" {
			// A messageExpression that does not compile falls back to the
			// message at run time, as an evaluation error does.
			cv.message, _ = msgComp.Compile(v.MessageExpression, types.StringType)
		}
		c.validations = append(c.validations, cv)
		c.Reads.Add(cv.expr)
		c.Reads.Add(cv.message)
	}
	if len(c.validations) > 1 && !slices.ContainsFunc(c.validations, asksAuthorizer) {
		c.allPass = conjunction(comp, p.Spec.Validations)
	}
	for _, aa := range p.Spec.AuditAnnotations {
		e, err := comp.Compile(aa.ValueExpression, nil)
		if err != nil {
			return fail(fmt.Sprintf("compilation failed for audit annotation '%s'", aa.Key), err)
		}
		c.auditAnnotations = append(c.auditAnnotations, policyset.NamedExpr{Name: aa.Key, Expr: e})
		c.Reads.Add(e)
	}
	if !track {
		c.untracked = policyset.Untrack(c.exprRefs()...)
	}
	return c
}

// exprRefs are pointers to every expression c evaluates on a write, for
// policyset.Untrack: all of them share one budget (evaluateParam).
func (c *compiled) exprRefs() []**cel.Expression {
	out := c.Expressions.ExprRefs()
	for i := range c.validations {
		out = append(out, &c.validations[i].expr, &c.validations[i].message)
	}
	out = append(out, &c.allPass)
	for i := range c.auditAnnotations {
		out = append(out, &c.auditAnnotations[i].Expr)
	}
	return out
}

// asksAuthorizer reports whether v's expression reads the authorizer.
func asksAuthorizer(v validation) bool {
	return v.expr.References(cel.AuthorizerVarName) || v.expr.References(cel.RequestResourceVarName)
}

// conjunction compiles the validations' expressions joined by &&; nil
// when that does not compile.
func conjunction(comp *cel.Compiler, vs []registration.Validation) *cel.Expression {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(" && ")
		}
		// On lines of their own: an expression may end in a comment.
		b.WriteString("(\n" + v.Expression + "\n)")
	}
	e, err := comp.Compile(b.String(), nil)
	if err != nil {
		return nil
	}
	return e
}

// The policy set of this kind and its parts.
type (
	set      = policyset.Source[*registration.ValidatingAdmissionPolicy, *registration.ValidatingAdmissionPolicyBinding, *compiled]
	snapshot = policyset.Snapshot[*registration.ValidatingAdmissionPolicy, *registration.ValidatingAdmissionPolicyBinding, *compiled]
	hook     = policyset.Hook[*registration.ValidatingAdmissionPolicy, *compiled]
	bound    = policyset.Bound[*registration.ValidatingAdmissionPolicyBinding]
)

// Source holds the ValidatingAdmissionPolicies and bindings in effect
// (package admission/policyset's Source): Run keeps it equal to the
// stored ones; SetPolicies and SetBindings set it directly (a server
// without storage, a test). A policy is compiled once per generation.
type Source struct{ set *set }

// NewSource returns a Source that has not synced.
func NewSource() *Source {
	return &Source{set: policyset.NewSource[*registration.ValidatingAdmissionPolicy, *registration.ValidatingAdmissionPolicyBinding](compile)}
}

// Synced closes once the Source holds both policies and bindings.
func (s *Source) Synced() <-chan struct{} { return s.set.Synced() }

// SetPolicies replaces the policies.
func (s *Source) SetPolicies(ps []*registration.ValidatingAdmissionPolicy) { s.set.SetPolicies(ps) }

// SetBindings replaces the bindings.
func (s *Source) SetBindings(bs []*registration.ValidatingAdmissionPolicyBinding) {
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
// ends: an informer per kind, each change applied at once. Params are
// read from resources (see WatchParams), and each policy's generation is
// type-checked against the schemas of the resources it matches into its
// status (TypeCheck); nil resources serve no params and check nothing.
func (s *Source) Run(ctx context.Context, stores *registration.PolicyStores, resources policyset.Resources, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// changed wakes the type checker when the policies change.
	changed := make(chan struct{}, 1)
	if resources != nil {
		wg.Go(func() { runTypeChecking(ctx, stores.Policies, s.set.Policies, resources, changed, log) })
	}
	s.set.Run(ctx, policyset.Stores[*registration.ValidatingAdmissionPolicy, *registration.ValidatingAdmissionPolicyBinding]{
		Policies: stores.Policies, PolicyResource: "validatingadmissionpolicies",
		Bindings: stores.Bindings, BindingResource: "validatingadmissionpolicybindings",
		PoliciesChanged: func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}, resources, log)
}
