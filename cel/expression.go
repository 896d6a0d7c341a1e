package cel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/apikit-dev/apikit/cel/library"
	"github.com/apikit-dev/apikit/schema"
)

// Names of the variables admission expressions see (matchConditions,
// ValidatingAdmissionPolicy validations, messageExpressions, audit
// annotations and variables), as kube-apiserver names them.
const (
	ObjectVarName          = "object"
	OldObjectVarName       = "oldObject"
	RequestVarName         = "request"
	ParamsVarName          = "params"
	NamespaceObjectVarName = "namespaceObject"
	AuthorizerVarName      = "authorizer"
	VariablesVarName       = "variables"
	RequestResourceVarName = "authorizer.requestResource"
)

// Variable declares one variable of a Compiler. Without a Schema it is
// dyn; with one, its type is the schema's, as a rule's self is typed, so
// expressions are type-checked and its sizes bound the cost estimate.
type Variable struct {
	Name   string
	Schema *schema.Schema
	// Type is the variable's CEL type when it has no Schema, such as
	// library.AuthorizerType; nil is dyn.
	Type *types.Type
	// ResourceRoot marks a whole Kubernetes object: apiVersion, kind and
	// metadata.name/generateName are visible even if the schema omits them.
	ResourceRoot bool
}

// AdmissionVariables are the variables of a ValidatingAdmissionPolicy's
// expressions: object, oldObject, request, params, namespaceObject and
// variables as dyn; authorizer and authorizer.requestResource as the
// authorizer library's types (their values: library.NewAuthorizer and
// library.NewResourceCheck).
func AdmissionVariables() []Variable {
	return []Variable{
		{Name: ObjectVarName}, {Name: OldObjectVarName}, {Name: RequestVarName}, {Name: ParamsVarName},
		{Name: NamespaceObjectVarName}, {Name: VariablesVarName},
		{Name: AuthorizerVarName, Type: library.AuthorizerType},
		{Name: RequestResourceVarName, Type: library.ResourceCheckType},
	}
}

// Compiler compiles expressions over declared variables in Kubernetes'
// base environment, with kube's cost model. It is safe for concurrent use.
type Compiler struct {
	env       *cel.Env
	decls     map[string]*declType
	estimator *library.CostEstimator
	// untracked is env's twin without the programs' cost tracking, built
	// with envOpts the first time Expression.Untracked needs it.
	envOpts   []cel.EnvOption
	untracked func() (*cel.Env, error)
}

// NewCompiler returns a Compiler for the given variables.
func NewCompiler(vars ...Variable) (*Compiler, error) {
	return newCompiler(nil, nil, vars)
}

// newCompiler builds a Compiler whose type provider is wrap's of the base
// environment's (nil: the base's), with the extra options.
func newCompiler(wrap func(types.Provider) types.Provider, extra []cel.EnvOption, vars []Variable) (*Compiler, error) {
	base, err := BaseEnv()
	if err != nil {
		return nil, err
	}
	provider := base.CELTypeProvider()
	if wrap != nil {
		provider = wrap(provider)
	}
	dt := &declTypes{base: provider, objects: map[string]*declType{}}
	c := &Compiler{decls: map[string]*declType{}}
	opts := append(dt.envOptions(), extra...)
	seen := map[string]bool{}
	for _, v := range vars {
		if seen[v.Name] {
			return nil, fmt.Errorf("cel: variable %q declared twice", v.Name)
		}
		seen[v.Name] = true
		t := types.DynType
		if v.Type != nil {
			t = v.Type
		}
		if v.Schema != nil {
			d := dt.build(v.Schema, fmt.Sprintf("%sType%d", v.Name, selfTypeCounter.Add(1)), v.ResourceRoot)
			if d == nil {
				return nil, fmt.Errorf("cel: the schema of variable %q has no CEL type", v.Name)
			}
			c.decls[v.Name] = d
			t = d.celType
		}
		opts = append(opts, cel.Variable(v.Name, t))
	}
	if c.env, err = base.Extend(opts...); err != nil {
		return nil, fmt.Errorf("cel: declaring variables: %w", err)
	}
	c.estimator = &library.CostEstimator{SizeEstimator: &varSizes{decls: c.decls}}
	c.untracked = sync.OnceValues(func() (*cel.Env, error) {
		base, err := untrackedBaseEnv()
		if err != nil {
			return nil, err
		}
		env, err := base.Extend(opts...)
		if err != nil {
			return nil, fmt.Errorf("cel: declaring variables: %w", err)
		}
		return env, nil
	})
	return c, nil
}

// Expression is a compiled expression.
type Expression struct {
	program cel.Program
	// ast and compiler build the untracked program (Untracked) and bound
	// what tracking can charge (RuntimeCostBound).
	ast      *cel.Ast
	compiler *Compiler
	// untracked: program does not track cost (Untracked).
	untracked bool
	decls     map[string]*declType
	// interruptible: the expression has a comprehension, the one place
	// cel-go checks for cancellation; evaluations of the others run
	// without a context of their own (see Eval).
	interruptible bool
	// refs are the declared variables the expression reads.
	refs []string
	// MaxCost is the estimated worst-case cost of one evaluation.
	MaxCost uint64
	// Source is the expression's text.
	Source string
}

// CompileError is an expression that does not compile; Detail is kube's
// wording ("compilation failed: ...").
type CompileError struct{ Detail string }

func (e *CompileError) Error() string { return e.Detail }

// Compile compiles expr, which must evaluate to want (nil: any type).
func (c *Compiler) Compile(expr string, want *types.Type) (*Expression, error) {
	ast, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		return nil, &CompileError{Detail: "compilation failed: " + iss.String()}
	}
	if want != nil && !ast.OutputType().IsExactType(want) && ast.OutputType() != types.DynType {
		return nil, &CompileError{Detail: fmt.Sprintf("must evaluate to %s but got %s", want, ast.OutputType())}
	}
	prog, err := c.env.Program(ast, programOptions(PerCallLimit)...)
	if err != nil {
		return nil, &CompileError{Detail: "program instantiation failed: " + err.Error()}
	}
	est, err := c.env.EstimateCost(ast, c.estimator)
	if err != nil {
		return nil, &CompileError{Detail: "cost estimation failed: " + err.Error()}
	}
	interruptible, refs := inspect(ast.NativeRep())
	return &Expression{program: prog, ast: ast, compiler: c, decls: c.decls, interruptible: interruptible, refs: refs, MaxCost: est.Max, Source: expr}, nil
}

// RuntimeCostBound bounds what cel-go's cost tracker can charge one
// evaluation of the expression, whatever the variables' values:
// math.MaxUint64 when nothing bounds it (a comprehension over a
// variable's list, a function whose cost grows with a variable's string).
// It is the static estimate (MaxCost) corrected where cel-go's tracker
// charges otherwise than its estimator (TestRuntimeCostBound holds the
// bound to the tracker):
//   - a field selected from a dyn value (every admission variable is dyn)
//     is free to the estimator, 1 to the tracker;
//   - a call of a standard function that more than one overload fits (an
//     "in" whose right side is dyn fits a list's and a map's, string() of
//     dyn a string's and bytes') is dispatched at run time, and the
//     tracker, given no overload, charges 1, while the estimate charges
//     the costliest overload, a list's length or a string's, unknown.
func (e *Expression) RuntimeCostBound() uint64 {
	a := e.ast.NativeRep()
	selects, ok := dynSelects(a, a.Expr(), 1)
	if !ok {
		return math.MaxUint64
	}
	est := e.MaxCost
	dispatched := map[int64]bool{}
	refs := a.ReferenceMap()
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() != celast.CallKind || !chargedOneDispatched[x.AsCall().FunctionName()] {
			return
		}
		if r, ok := refs[x.ID()]; ok && len(r.OverloadIDs) > 1 {
			if id, ok := firstOperand(x.AsCall()); ok {
				dispatched[id] = true
			}
		}
	}))
	if len(dispatched) > 0 {
		c, err := e.compiler.env.EstimateCost(e.ast, &trackerCosts{CostEstimator: e.compiler.estimator, dispatched: dispatched})
		if err != nil {
			return math.MaxUint64
		}
		est = c.Max
	}
	if est > math.MaxUint64-selects {
		return math.MaxUint64
	}
	return est + selects
}

// dynSelects counts the evaluations of selections of a field from a value
// the checker does not type as a map or an object, each e taking times
// evaluations: false when a comprehension over a range of unknown size
// holds one.
func dynSelects(a *celast.AST, e celast.Expr, times uint64) (uint64, bool) {
	var n uint64
	add := func(x celast.Expr, t uint64) bool {
		c, ok := dynSelects(a, x, t)
		if !ok || c > math.MaxUint64-n {
			return false
		}
		n += c
		return true
	}
	switch e.Kind() {
	case celast.SelectKind:
		s := e.AsSelect()
		if !s.IsTestOnly() {
			switch a.GetType(s.Operand().ID()).Kind() {
			case types.MapKind, types.StructKind, types.TypeParamKind:
			default:
				n = times
			}
		}
		if !add(s.Operand(), times) {
			return 0, false
		}
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() && !add(c.Target(), times) {
			return 0, false
		}
		for _, x := range c.Args() {
			if !add(x, times) {
				return 0, false
			}
		}
	case celast.ListKind:
		for _, x := range e.AsList().Elements() {
			if !add(x, times) {
				return 0, false
			}
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			if !add(me.Key(), times) || !add(me.Value(), times) {
				return 0, false
			}
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if !add(f.AsStructField().Value(), times) {
				return 0, false
			}
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		if !add(c.IterRange(), times) || !add(c.AccuInit(), times) || !add(c.Result(), times) {
			return 0, false
		}
		// The condition and the step run once per element, and the
		// condition once more.
		var size uint64
		switch r := c.IterRange(); r.Kind() {
		case celast.ListKind:
			size = uint64(len(r.AsList().Elements()))
		case celast.MapKind:
			size = uint64(len(r.AsMap().Entries()))
		default:
			// Of unknown size: bounded only without such selections.
			for _, x := range []celast.Expr{c.LoopCondition(), c.LoopStep()} {
				if c, ok := dynSelects(a, x, 1); !ok || c > 0 {
					return 0, false
				}
			}
			return n, true
		}
		per := mulGuard(times, size+1)
		if !add(c.LoopCondition(), per) || !add(c.LoopStep(), per) {
			return 0, false
		}
	}
	return n, true
}

// chargedOneDispatched are the standard functions cel-go's tracker
// charges 1 when it dispatches them at run time: neither its own costs
// (by overload) nor the library's (by name) know them without an overload.
var chargedOneDispatched = map[string]bool{
	"@in": true, "size": true, "string": true, "bytes": true, "int": true, "uint": true, "double": true, "bool": true,
}

// firstOperand is the id of a call's target, or of its first argument
// without one: a node of this call's alone, which identifies it to
// trackerCosts, as cel-go gives an estimator a call's operands only.
func firstOperand(c celast.CallExpr) (int64, bool) {
	if c.IsMemberFunction() {
		return c.Target().ID(), true
	}
	if len(c.Args()) == 0 {
		return 0, false
	}
	return c.Args()[0].ID(), true
}

// trackerCosts estimates the cost tracker's charges: the estimator's, but
// 1 for the calls dispatched at run time (keyed by firstOperand).
type trackerCosts struct {
	*library.CostEstimator
	dispatched map[int64]bool
}

func (t *trackerCosts) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	var first checker.AstNode
	switch {
	case target != nil:
		first = *target
	case len(args) > 0:
		first = args[0]
	}
	if first != nil && t.dispatched[first.Expr().ID()] {
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}}
	}
	return t.CostEstimator.EstimateCallCost(function, overloadID, target, args)
}

// Untracked returns the expression with a program that does not track
// its cost: no cel-go cost observer around each step, no cost stack, no
// per-call limit, and Eval reports a cost of 0. Only for an expression
// whose evaluations cannot reach a limit, which RuntimeCostBound shows:
// a caller holding a set of expressions to a budget must know the set's
// bounds fit in it.
func (e *Expression) Untracked() (*Expression, error) {
	if e.untracked {
		return e, nil
	}
	env, err := e.compiler.untracked()
	if err != nil {
		return nil, err
	}
	prog, err := env.Program(e.ast, untrackedProgramOptions()...)
	if err != nil {
		return nil, fmt.Errorf("cel: building the untracked program of %q: %w", e.Source, err)
	}
	u := *e
	u.program, u.untracked = prog, true
	return &u, nil
}

// inspect reports whether a has a comprehension and which variables it
// reads (its identifiers the checker resolved, in the order first read).
func inspect(a *celast.AST) (comprehension bool, refs []string) {
	refMap := a.ReferenceMap()
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.ComprehensionKind:
			comprehension = true
		case celast.IdentKind, celast.SelectKind:
			// A dotted variable (authorizer.requestResource) is a select
			// the checker resolved to the variable.
			if r, ok := refMap[e.ID()]; ok && r.Name != "" && r.Value == nil && !slices.Contains(refs, r.Name) {
				refs = append(refs, r.Name)
			}
		}
	}))
	return comprehension, refs
}

// References reports whether the expression reads the variable name: a
// caller may leave a variable no expression reads unset, and skip
// building it.
func (e *Expression) References(name string) bool { return slices.Contains(e.refs, name) }

// ErrBudget is returned when an evaluation would exceed the budget it was
// given.
var ErrBudget = errors.New("running out of cost budget")

// Eval evaluates the expression with the given variables (JSON values as
// schema/structural decodes them, or CEL values) and returns its result and
// actual cost. An evaluation costing more than budget, or more than
// PerCallLimit, fails; errors carry cel-go's text, which kube shows.
func (e *Expression) Eval(ctx context.Context, vars map[string]any, budget int64) (ref.Val, int64, error) {
	act := &varActivation{vars: vars, decls: e.decls}
	var val ref.Val
	var det *cel.EvalDetails
	var err error
	if e.interruptible {
		val, det, err = e.program.ContextEval(ctx, act)
	} else {
		// cel-go checks the context only between a comprehension's
		// iterations: without one, ContextEval's result is Eval's, and its
		// cancelable context per evaluation (a context, its registration
		// with the request's and a gate) was a fifth of a policy's cost.
		// The cost limit still bounds the evaluation.
		val, det, err = e.program.Eval(act)
	}
	var cost int64
	if det != nil && det.ActualCost() != nil {
		c := *det.ActualCost()
		if c > math.MaxInt64 {
			c = math.MaxInt64
		}
		cost = int64(c)
	}
	if err != nil {
		return nil, cost, err
	}
	if cost > budget {
		return nil, cost, ErrBudget
	}
	return val, cost, nil
}

// varActivation converts the variables to CEL values as they are read.
type varActivation struct {
	vars  map[string]any
	decls map[string]*declType
}

func (a *varActivation) ResolveName(name string) (any, bool) {
	v, ok := a.vars[name]
	if !ok {
		return nil, false
	}
	if rv, isVal := v.(ref.Val); isVal {
		return rv, true
	}
	return toVal(v, a.decls[name]), true
}

func (a *varActivation) Parent() interpreter.Activation { return nil }

// varSizes bounds the sizes of schema-typed variables.
type varSizes struct{ decls map[string]*declType }

func (v *varSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	p := n.Path()
	if len(p) == 0 {
		return nil
	}
	d, ok := v.decls[p[0]]
	if !ok {
		return nil
	}
	return (&sizeEstimator{root: d}).EstimateSize(n)
}

func (v *varSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
