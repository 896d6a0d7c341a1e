package cel

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/cel/library"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// Names of the variables a validation rule sees.
const (
	ScopedVarName    = "self"
	OldScopedVarName = "oldSelf"
)

// Validator holds the compiled x-kubernetes-validations rules of a schema
// tree, node by node, and evaluates them on values. It is built once per
// schema (a CRD generation) and is safe for concurrent use.
type Validator struct {
	schema     *schema.Schema
	decl       *declType
	rules      []compiledRule
	properties map[string]*Validator
	items      *Validator
	additional *Validator
	allOf      []*Validator
	// usesOldSelf is set when a rule of the node uses oldSelf: only then
	// is oldSelf bound for the node's rules and messageExpressions.
	usesOldSelf bool
}

type compiledRule struct {
	rule        schema.ValidationRule
	program     cel.Program
	message     cel.Program
	usesOldSelf bool
	optional    bool
	// fieldPath is the rule's fieldPath, normalized, relative to the node.
	fieldPath string
}

var selfTypeCounter atomic.Uint64

// CompileSchema compiles every x-kubernetes-validations rule of the schema
// of a resource (s is the resource's root) and returns the Validator
// that evaluates them, nil when s holds no rule. The errors are those
// kube-apiserver reports for the rules when a CustomResourceDefinition is
// written — fieldPaths that name no field, compilation and type errors,
// oldSelf where old values cannot be known, and the estimated cost of each
// rule and of all together — at field paths under path, the schema's
// place in the CRD (such as spec.versions[0].schema.openAPIV3Schema). The
// static checks of the rule entries (empty rules, messages, reasons) are
// schema/structural's CheckStructural: run it first, as kube does. A
// Validator is returned even with errors: it validates with the rules that
// compiled.
func CompileSchema(s *schema.Schema, path *meta.Path) (*Validator, meta.FieldErrors) {
	base, err := BaseEnv()
	if err != nil {
		return nil, meta.FieldErrors{meta.InternalFieldError(path, err)}
	}
	root := fmt.Sprintf("selfType%d", selfTypeCounter.Add(1))
	c := &compiler{
		base:  base,
		decls: &declTypes{base: base.CELTypeProvider(), objects: map[string]*declType{}},
		total: &totalCost{},
	}
	one := uint64(1)
	v := c.node(s, c.decls.build(s, root, true), path, &one, nil)
	errs := c.errs
	if c.total.total > StaticEstimatedCRDCostLimit {
		for _, e := range c.total.mostExpensive {
			errs = append(errs, meta.Forbidden(e.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
		}
		errs = append(errs, meta.Forbidden(path, costErrorMessage(
			"x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
			c.total.total, StaticEstimatedCRDCostLimit)))
	}
	return v, errs
}

type compiler struct {
	base  *cel.Env
	decls *declTypes
	total *totalCost
	errs  meta.FieldErrors
}

// totalCost sums the estimated cost of all rules of a CRD, keeping the
// four most expensive that each take at least 1% of the CRD's limit.
type totalCost struct {
	total         uint64
	mostExpensive []ruleCost
}

type ruleCost struct {
	path *meta.Path
	cost uint64
}

func (t *totalCost) observe(path *meta.Path, cost uint64) {
	if math.MaxUint64-t.total < cost {
		t.total = math.MaxUint64
	} else {
		t.total += cost
	}
	if cost < StaticEstimatedCRDCostLimit/100 {
		return
	}
	t.mostExpensive = append(t.mostExpensive, ruleCost{path, cost})
	sort.SliceStable(t.mostExpensive, func(i, j int) bool { return t.mostExpensive[i].cost > t.mostExpensive[j].cost })
	if len(t.mostExpensive) > 4 {
		t.mostExpensive = t.mostExpensive[:4]
	}
}

func mulGuard(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	if math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

// childCardinality is how many times a child of s may occur per occurrence
// of s: 1 for an object's fields, maxItems or maxProperties for a list or
// map, nil (unbounded) when those are not set.
func childCardinality(parent *uint64, s *schema.Schema) *uint64 {
	if parent == nil {
		return nil
	}
	var n uint64
	switch {
	case s.Type == "object" && s.AdditionalProperties != nil:
		if s.MaxProperties == nil {
			return nil
		}
		n = uint64(zeroIfNegative(*s.MaxProperties))
	case s.Type == "array":
		if s.MaxItems == nil {
			return nil
		}
		n = uint64(zeroIfNegative(*s.MaxItems))
	default:
		n = 1
	}
	r := mulGuard(*parent, n)
	return &r
}

func hasRules(s *schema.Schema) bool {
	if s == nil {
		return false
	}
	if len(s.Validations) > 0 {
		return true
	}
	for _, p := range s.Properties {
		if hasRules(p.Schema) {
			return true
		}
	}
	for _, a := range s.AllOf {
		if hasRules(a) {
			return true
		}
	}
	return hasRules(s.Items) || hasRules(s.AdditionalProperties)
}

// node compiles the rules of s and below. uncorrelatable is the path of
// the nearest list above s whose items cannot be paired with old ones.
func (c *compiler) node(s *schema.Schema, decl *declType, path *meta.Path, cardinality *uint64, uncorrelatable *meta.Path) *Validator {
	if !hasRules(s) {
		return nil
	}
	v := &Validator{schema: s, decl: decl}
	names := make([]string, 0, len(s.Properties))
	props := map[string]*schema.Schema{}
	for _, p := range s.Properties {
		names = append(names, p.Name)
		props[p.Name] = p.Schema
	}
	sort.Strings(names)
	for _, name := range names {
		ps := props[name]
		if !hasRules(ps) {
			continue
		}
		var pd *declType
		if decl != nil && decl.fields != nil {
			if esc, ok := Escape(name); ok {
				if f, ok := decl.fields[esc]; ok {
					pd = f.typ
				}
			} else {
				pd = c.decls.build(ps, decl.celType.TypeName()+"."+name, ps.EmbeddedResource)
			}
		}
		if pv := c.node(ps, pd, path.Child("properties").Key(name), childCardinality(cardinality, s), uncorrelatable); pv != nil {
			if v.properties == nil {
				v.properties = map[string]*Validator{}
			}
			v.properties[name] = pv
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		var ed *declType
		if decl != nil {
			ed = decl.elem
		}
		v.additional = c.node(ap, ed, path.Child("additionalProperties"), childCardinality(cardinality, s), uncorrelatable)
	}
	if it := s.Items; it != nil {
		var ed *declType
		if decl != nil {
			ed = decl.elem
		}
		unc := uncorrelatable
		if unc == nil && s.ListType != schema.ListMap {
			unc = path
		}
		v.items = c.node(it, ed, path.Child("items"), childCardinality(cardinality, s), unc)
	}
	for i, a := range s.AllOf {
		if len(a.Validations) == 0 {
			continue
		}
		// An allOf branch's rules see the node's value, typed by the node.
		branch := *s
		branch.Validations = a.Validations
		branch.Properties, branch.Items, branch.AdditionalProperties, branch.AllOf = nil, nil, nil, nil
		if av := c.node(&branch, decl, path.Child("allOf").Index(i), cardinality, uncorrelatable); av != nil {
			v.allOf = append(v.allOf, av)
		}
	}
	if len(s.Validations) > 0 {
		v.rules = c.rules(s, decl, path, cardinality, uncorrelatable)
		v.usesOldSelf = slices.ContainsFunc(v.rules, func(r compiledRule) bool { return r.usesOldSelf })
	}
	return v
}

// checkFieldPaths reports rules whose fieldPath does not name a field of
// s. The other static checks of a rule entry (empty rules, messages with
// line breaks, reasons) are schema/structural's CheckStructural, which the
// extensions server runs first, as kube-apiserver does.
func checkFieldPaths(s *schema.Schema, path *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	for i, r := range s.Validations {
		if strings.TrimSpace(r.FieldPath) == "" {
			continue
		}
		if _, err := validFieldPath(r.FieldPath, s); err != nil {
			errs = append(errs, meta.Invalid(path.Child("x-kubernetes-validations").Index(i).Child("fieldPath"), r.FieldPath, "must be a valid path"))
		}
	}
	return errs
}

// rules compiles the node's own rules.
func (c *compiler) rules(s *schema.Schema, decl *declType, path *meta.Path, cardinality *uint64, uncorrelatable *meta.Path) []compiledRule {
	if errs := checkFieldPaths(s, path); len(errs) > 0 {
		// As kube: schema errors first; CEL is compiled once they are fixed.
		c.errs = append(c.errs, errs...)
		return nil
	}
	at := path.Child("x-kubernetes-validations")
	if decl == nil {
		c.errs = append(c.errs, meta.InternalFieldError(at, fmt.Errorf(
			"internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations")))
		return nil
	}
	envs, err := c.envs(decl)
	if err != nil {
		c.errs = append(c.errs, meta.InternalFieldError(at, err))
		return nil
	}
	estimator := &library.CostEstimator{SizeEstimator: &sizeEstimator{root: decl}}
	var out []compiledRule
	for i, r := range s.Validations {
		if strings.TrimSpace(r.Rule) == "" {
			continue // CheckStructural's "rule is not specified"
		}
		rulePath := at.Index(i)
		cr := compiledRule{rule: r, optional: r.OptionalOldSelf != nil && *r.OptionalOldSelf}
		env := envs.plain
		if cr.optional {
			env = envs.optional
		}
		ruleCost, cerr := compileExpr(env, r.Rule, estimator, types.BoolType, "cel expression must evaluate to a bool", "compilation failed: ")
		card := uint64(0)
		if cardinality != nil {
			card = *cardinality
		} else {
			card = uint64(MaxRequestSizeBytes / (decl.minSize + 1))
		}
		cost := mulGuard(ruleCost.maxCost, card)
		if cost > StaticEstimatedCostLimit {
			c.errs = append(c.errs, meta.Forbidden(rulePath.Child("rule"), costErrorMessage("estimated rule cost", cost, StaticEstimatedCostLimit)))
		}
		c.total.observe(rulePath.Child("rule"), cost)
		if cerr != "" {
			c.errs = append(c.errs, meta.Invalid(rulePath.Child("rule"), newRuleValue(r), cerr))
			continue
		}
		cr.program = ruleCost.program
		cr.usesOldSelf = ruleCost.usesOldSelf
		if r.MessageExpression != "" {
			msgCost, merr := compileExpr(env, r.MessageExpression, estimator, types.StringType,
				"messageExpression must evaluate to a string", "messageExpression compilation failed: ")
			if merr != "" {
				c.errs = append(c.errs, meta.Invalid(rulePath.Child("messageExpression"), newRuleValue(r), merr))
			} else {
				if msgCost.maxCost > StaticEstimatedCostLimit {
					c.errs = append(c.errs, meta.Forbidden(rulePath.Child("messageExpression"),
						costErrorMessage("estimated messageExpression cost", msgCost.maxCost, StaticEstimatedCostLimit)))
				}
				c.total.observe(rulePath.Child("messageExpression"), msgCost.maxCost)
				cr.message = msgCost.program
			}
		}
		if cr.usesOldSelf {
			if uncorrelatable != nil {
				c.errs = append(c.errs, meta.Invalid(rulePath.Child("rule"), r.Rule,
					fmt.Sprintf("oldSelf cannot be used on the uncorrelatable portion of the schema within %v", uncorrelatable)))
			}
		} else if r.OptionalOldSelf != nil {
			c.errs = append(c.errs, meta.Invalid(rulePath.Child("optionalOldSelf"), *r.OptionalOldSelf, "may not be set if oldSelf is not used in rule"))
		}
		if strings.TrimSpace(r.FieldPath) != "" {
			if p, err := validFieldPath(r.FieldPath, s); err == nil {
				cr.fieldPath = p.String()
			}
		}
		out = append(out, cr)
	}
	return out
}

type ruleEnvs struct{ plain, optional *cel.Env }

// envs extends the base environment with self and oldSelf typed as decl,
// and a second one where oldSelf is optional.
func (c *compiler) envs(decl *declType) (ruleEnvs, error) {
	plain, err := c.base.Extend(append(c.decls.envOptions(),
		cel.Variable(ScopedVarName, decl.celType),
		cel.Variable(OldScopedVarName, decl.celType))...)
	if err != nil {
		return ruleEnvs{}, fmt.Errorf("cel: declaring self: %w", err)
	}
	optional, err := c.base.Extend(append(c.decls.envOptions(),
		cel.Variable(ScopedVarName, decl.celType),
		cel.Variable(OldScopedVarName, types.NewOptionalType(decl.celType)))...)
	if err != nil {
		return ruleEnvs{}, fmt.Errorf("cel: declaring optional oldSelf: %w", err)
	}
	return ruleEnvs{plain, optional}, nil
}

type compiledExpr struct {
	program     cel.Program
	maxCost     uint64
	usesOldSelf bool
}

// compileExpr compiles, type-checks and estimates one expression; the
// string is kube's error detail, empty on success.
func compileExpr(env *cel.Env, expr string, estimator *library.CostEstimator, want *types.Type, wantMsg, prefix string) (compiledExpr, string) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return compiledExpr{}, prefix + iss.String()
	}
	if !ast.OutputType().IsExactType(want) {
		return compiledExpr{}, wantMsg
	}
	var out compiledExpr
	for _, r := range ast.NativeRep().ReferenceMap() {
		if r.Name == OldScopedVarName {
			out.usesOldSelf = true
			break
		}
	}
	prog, err := env.Program(ast, programOptions(PerCallLimit)...)
	if err != nil {
		return compiledExpr{}, "program instantiation failed: " + err.Error()
	}
	est, err := env.EstimateCost(ast, estimator)
	if err != nil {
		return compiledExpr{}, "cost estimation failed: " + err.Error()
	}
	out.program = prog
	out.maxCost = est.Max
	return out, ""
}

// costErrorMessage is kube's: how far over budget, with advice.
func costErrorMessage(name string, cost, limit uint64) string {
	f := float64(cost) / float64(limit)
	var factor string
	switch {
	case f > 100:
		factor = "more than 100x"
	case f < 1.5:
		factor = fmt.Sprintf("%fx", f)
	default:
		factor = fmt.Sprintf("%.1fx", f)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", name, factor)
}

// sizeEstimator bounds the size of self's parts from the schema.
type sizeEstimator struct{ root *declType }

func (e *sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	p := n.Path()
	if len(p) == 0 {
		return nil
	}
	t := e.root
	for _, name := range p[1:] {
		switch name {
		case "@items", "@values":
			if t.elem == nil {
				return nil
			}
			t = t.elem
		case "@keys":
			if t.kind != kindMap {
				return nil
			}
			// kube's map keys are strings of no declared length.
			return &checker.SizeEstimate{Min: 0, Max: 0}
		default:
			f, ok := t.fields[name]
			if !ok {
				return nil
			}
			t = f.typ
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.maxElements)}
}

func (e *sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
