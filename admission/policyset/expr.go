package policyset

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/cel/library"
)

// NamedExpr is a compiled expression and the name it is known by (a
// matchCondition's, a variable's, an audit annotation's key).
type NamedExpr struct {
	Name string
	Expr *cel.Expression
}

// Expressions are what both policy kinds' specs compile alike: their
// matchConditions and variables.
type Expressions struct {
	MatchConditions []NamedExpr
	Variables       []NamedExpr
	// Reads are the costly variables these expressions read; a policy
	// adds its other expressions'.
	Reads Reads
}

// Reads are the variables beside object and oldObject that a policy's
// expressions read: those none reads are left unset, and those that cost
// something per write not built (a policy of rules over object alone pays
// for no request, with its UID, nor authorizer).
type Reads struct {
	// Request is the request variable.
	Request bool
	// Authorizer is authorizer or authorizer.requestResource.
	Authorizer bool
	// Params and NamespaceObject are those variables.
	Params, NamespaceObject bool
}

// ReadsAll is every variable read: what a caller that does not know its
// expressions' reads passes.
var ReadsAll = Reads{Request: true, Authorizer: true, Params: true, NamespaceObject: true}

// Add adds what e reads (nil: nothing).
func (r *Reads) Add(e *cel.Expression) {
	if e == nil {
		return
	}
	r.Request = r.Request || e.References(cel.RequestVarName)
	r.Authorizer = r.Authorizer || e.References(cel.AuthorizerVarName) || e.References(cel.RequestResourceVarName)
	r.Params = r.Params || e.References(cel.ParamsVarName)
	r.NamespaceObject = r.NamespaceObject || e.References(cel.NamespaceObjectVarName)
}

// CompileExpressions compiles a policy's matchConditions (each a bool)
// and variables with kube-apiserver's messages, with the compiler of a
// policy's expressions (registration.PolicyCompiler, params declared when
// hasParams), which it returns for the policy's other expressions.
func CompileExpressions(hasParams bool, mcs []registration.MatchCondition, vs []registration.Variable) (*cel.Compiler, Expressions, error) {
	var out Expressions
	comp, err := registration.PolicyCompiler(hasParams, false)
	if err != nil {
		return nil, out, err
	}
	for _, mc := range mcs {
		e, err := comp.Compile(mc.Expression, types.BoolType)
		if err != nil {
			return nil, out, fmt.Errorf("compilation failed for match condition %s: %w", mc.Name, err)
		}
		out.MatchConditions = append(out.MatchConditions, NamedExpr{mc.Name, e})
		out.Reads.Add(e)
	}
	for _, v := range vs {
		e, err := comp.Compile(v.Expression, nil)
		if err != nil {
			return nil, out, fmt.Errorf("compilation failed for variable %s: %w", v.Name, err)
		}
		out.Variables = append(out.Variables, NamedExpr{v.Name, e})
		out.Reads.Add(e)
	}
	return comp, out, nil
}

// errBudget is kube-apiserver's message for a policy that ran out of its
// runtime cost budget.
var errBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// Eval evaluates e within what is left of *budget, which it lowers by
// the cost, with kube-apiserver's messages.
func Eval(ctx context.Context, e *cel.Expression, vars map[string]any, budget *int64) (ref.Val, error) {
	val, cost, err := e.Eval(ctx, vars, *budget)
	*budget -= cost
	if errors.Is(err, cel.ErrBudget) || *budget < 0 {
		return nil, errBudget
	}
	if err != nil {
		return nil, fmt.Errorf("expression '%s' resulted in error: %w", e.Source, err)
	}
	return val, nil
}

// SetVariables sets vars' variables, in order, each seeing those before
// it; one that fails is an error value, which fails only the expressions
// reading it.
func (x *Expressions) SetVariables(ctx context.Context, vars map[string]any, budget *int64) {
	if len(x.Variables) == 0 {
		// vars may hold another policy's.
		delete(vars, cel.VariablesVarName)
		return
	}
	evaluated := map[ref.Val]ref.Val{}
	for _, nv := range x.Variables {
		vars[cel.VariablesVarName] = types.NewRefValMap(types.DefaultTypeAdapter, evaluated)
		val, err := Eval(ctx, nv.Expr, vars, budget)
		if err != nil {
			val = types.NewErr("%s", err.Error())
		}
		evaluated[types.String(nv.Name)] = val
	}
	vars[cel.VariablesVarName] = types.NewRefValMap(types.DefaultTypeAdapter, evaluated)
}

// Matches evaluates the matchConditions as kube-apiserver does: any false
// skips the binding (false, nil) whatever the others' errors; otherwise
// the errors, all of them, go to the failurePolicy.
func (x *Expressions) Matches(ctx context.Context, vars map[string]any, budget *int64) (bool, error) {
	var errs []error
	for _, mc := range x.MatchConditions {
		val, err := Eval(ctx, mc.Expr, vars, budget)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to evaluate match condition %q: %w", mc.Name, err))
			continue
		}
		if val == types.False {
			return false, nil
		}
	}
	if len(errs) > 0 {
		return false, errors.Join(errs...)
	}
	return true, nil
}

// SetOptional sets the variables of reads that a policy's expressions
// see beside the write's: params (null without one), namespaceObject
// (null for none) and, with an authorizer, authorizer and
// authorizer.requestResource. A variable reads lacks is left as it is in
// vars: no expression of the policy reads it.
func SetOptional(ctx context.Context, vars map[string]any, a *admission.Attributes, param *Param, nsObj map[string]any, az authz.Authorizer, reads Reads) {
	if reads.Params {
		// A nil map would be an empty map to CEL: null is an untyped nil.
		vars[cel.ParamsVarName] = nil
		if param != nil {
			vars[cel.ParamsVarName] = param.Value
		}
	}
	if reads.NamespaceObject {
		vars[cel.NamespaceObjectVarName] = nil
		if nsObj != nil {
			vars[cel.NamespaceObjectVarName] = nsObj
		}
	}
	if az != nil && reads.Authorizer {
		vars[cel.AuthorizerVarName] = library.NewAuthorizer(ctx, az, a.User)
		vars[cel.RequestResourceVarName] = library.NewResourceCheck(ctx, az, a.User, authz.Attributes{
			APIGroup: a.Resource.Group, APIVersion: a.Resource.Version, Resource: a.Resource.Resource,
			Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name})
	}
}

// Untrack gives the expressions of one policy (each a pointer to one of
// its fields; nil ones are skipped) their programs without cost tracking
// (cel.Expression.Untracked) when tracking could refuse nothing: none can
// cost more than cel.PerCallLimit in one evaluation and all of them
// together no more than cel.RuntimeCELCostBudget, the budget of one
// evaluation of the policy (cel.Expression.RuntimeCostBound). Tracking
// then only costs: cel-go's observer around every step of every
// evaluation. Otherwise every expression stays tracked, as a budget that
// untracked expressions share would be charged less than kube-apiserver
// charges it. It reports whether it untracked them.
func Untrack(exprs ...**cel.Expression) bool {
	var total uint64
	for _, p := range exprs {
		if *p == nil {
			continue
		}
		b := (*p).RuntimeCostBound()
		if b > cel.PerCallLimit {
			return false
		}
		if total += b; total > cel.RuntimeCELCostBudget {
			return false
		}
	}
	untracked := make([]*cel.Expression, len(exprs))
	for i, p := range exprs {
		if *p == nil {
			continue
		}
		u, err := (*p).Untracked()
		if err != nil {
			return false
		}
		untracked[i] = u
	}
	for i, p := range exprs {
		if untracked[i] != nil {
			*p = untracked[i]
		}
	}
	return true
}

// ExprRefs are pointers to x's expressions, for Untrack.
func (x *Expressions) ExprRefs() []**cel.Expression {
	var out []**cel.Expression
	for i := range x.MatchConditions {
		out = append(out, &x.MatchConditions[i].Expr)
	}
	for i := range x.Variables {
		out = append(out, &x.Variables[i].Expr)
	}
	return out
}
