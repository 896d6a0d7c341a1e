package cel

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// Result is what validating one object found.
type Result struct {
	// Errors are the rules that failed, as kube-apiserver reports them.
	Errors meta.FieldErrors
	// Warnings are failures kube ratchets: a rule without oldSelf failing
	// on a value the update left unchanged warns instead of refusing.
	Warnings []string
	// RemainingBudget is the runtime cost budget left; negative when the
	// budget ran out and later rules were not evaluated.
	RemainingBudget int64
}

// Validate evaluates the rules on obj, the new value at path, with old its
// previous value on an update (nil on create), within kube's runtime cost
// budget for one object.
func (v *Validator) Validate(ctx context.Context, path *meta.Path, obj, old any) Result {
	return v.ValidateWithBudget(ctx, path, obj, old, RuntimeCELCostBudget)
}

// ValidateWithBudget is Validate with a given cost budget.
func (v *Validator) ValidateWithBudget(ctx context.Context, path *meta.Path, obj, old any, budget int64) Result {
	r := &run{ctx: ctx, budget: budget}
	v.validate(r, path, obj, old, correlation{old: old, correlated: old != nil})
	return Result{Errors: r.errs, Warnings: r.warnings, RemainingBudget: r.budget}
}

type run struct {
	ctx      context.Context
	budget   int64
	errs     meta.FieldErrors
	warnings []string
}

func (r *run) out() bool { return r.budget < 0 }

// correlation tells whether a node's old value is known and whether errors
// on it are ratcheted: an unchanged correlated node, or one under an
// unchanged correlated ancestor, keeps its rules' failures as warnings.
type correlation struct {
	old        any
	correlated bool
	// parentUnchanged is set on nodes that cannot be correlated, from the
	// nearest correlated ancestor.
	parentUnchanged *bool
}

func (c correlation) unchanged(obj any) bool {
	if c.correlated {
		return reflect.DeepEqual(obj, c.old)
	}
	return c.parentUnchanged != nil && *c.parentUnchanged
}

func (c correlation) child(obj any, old any, ok bool) correlation {
	if c.correlated && ok {
		return correlation{old: old, correlated: true}
	}
	u := c.unchanged(obj)
	return correlation{parentUnchanged: &u}
}

func (v *Validator) validate(r *run, path *meta.Path, obj, old any, c correlation) {
	if v == nil || obj == nil || r.out() {
		return
	}
	if isNilValue(old) {
		old = nil
	}
	v.evaluate(r, path, obj, old, c)
	for _, a := range v.allOf {
		if r.out() {
			return
		}
		// kube does not ratchet allOf's rules.
		a.validate(r, path, obj, old, correlation{old: old, parentUnchanged: c.parentUnchanged})
	}
	if r.out() {
		return
	}
	switch o := obj.(type) {
	case map[string]any:
		oldMap, _ := old.(map[string]any)
		correlatable := v.schema.MapType != schema.MapAtomic
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var ov any
			var ok bool
			if correlatable && oldMap != nil {
				ov, ok = oldMap[k]
			}
			cc := c.child(o[k], ov, ok)
			if v.additional != nil {
				v.additional.validate(r, path.Key(k), o[k], ov, cc)
			}
			if pv := v.properties[k]; pv != nil {
				pv.validate(r, path.Child(k), o[k], ov, cc)
			}
			if r.out() {
				return
			}
		}
	case []any:
		if v.items == nil {
			return
		}
		oldList, _ := old.([]any)
		byKey := v.oldItemsByKey(oldList)
		for i, item := range o {
			var ov any
			var ok bool
			if byKey != nil {
				ov, ok = byKey[v.itemKey(item)]
			}
			v.items.validate(r, path.Index(i), item, ov, c.child(item, ov, ok))
			if r.out() {
				return
			}
		}
	}
}

func isNilValue(v any) bool {
	if v == nil {
		return false
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Map, reflect.Pointer, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

// oldItemsByKey indexes the old items of a map list by their keys; other
// lists' items have no old value.
func (v *Validator) oldItemsByKey(old []any) map[string]any {
	if v.schema.ListType != schema.ListMap || len(v.schema.ListMapKeys) == 0 || old == nil {
		return nil
	}
	m := make(map[string]any, len(old))
	for _, item := range old {
		m[v.itemKey(item)] = item
	}
	return m
}

func (v *Validator) itemKey(item any) string {
	obj, _ := item.(map[string]any)
	parts := make([]string, len(v.schema.ListMapKeys))
	for i, k := range v.schema.ListMapKeys {
		parts[i] = fmt.Sprintf("%T:%v", obj[k], obj[k])
	}
	return strings.Join(parts, "\x00")
}

var rootPath = meta.NewPath("<nil>")

// activation resolves self and oldSelf.
type activation struct {
	self, oldSelf ref.Val
	hasOldSelf    bool
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case ScopedVarName:
		return a.self, true
	case OldScopedVarName:
		return a.oldSelf, a.hasOldSelf
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// evaluate runs the node's own rules.
func (v *Validator) evaluate(r *run, path *meta.Path, obj, old any, c correlation) {
	if len(v.rules) == 0 {
		return
	}
	if path == nil || path.String() == "" {
		// kube's nil field path prints as <nil>: a rule at the root of a
		// custom resource reports "<nil>: Invalid value: ...".
		path = rootPath
	}
	badValue := v.schema.Type
	if r.budget <= 0 {
		r.errs = append(r.errs, meta.Invalid(path, badValue, "validation failed due to running out of cost budget, no further validation rules will be run"))
		r.budget = -1
		return
	}
	self := toVal(obj, v.decl)
	act := &activation{self: self}
	optAct := &activation{self: self, hasOldSelf: true, oldSelf: types.OptionalNone}
	if old != nil {
		act.oldSelf, act.hasOldSelf = toVal(old, v.decl), true
		optAct.oldSelf = types.OptionalOf(act.oldSelf)
	}
	var unchanged *bool
	for _, rule := range v.rules {
		if rule.usesOldSelf && old == nil && !rule.optional {
			// A transition rule runs only on updates with an old value.
			continue
		}
		a := act
		if rule.optional {
			a = optAct
		}
		result, details, err := rule.program.ContextEval(r.ctx, a)
		if details == nil || details.ActualCost() == nil {
			r.errs = append(r.errs, meta.Invalid(path, badValue, fmt.Sprintf("runtime cost could not be calculated for validation rule: %v, no further validation rules will be run", ruleErrorString(rule.rule))))
			r.budget = -1
			return
		}
		cost := *details.ActualCost()
		if cost > math.MaxInt64 || int64(cost) > r.budget {
			r.errs = append(r.errs, meta.Invalid(path, badValue, "validation failed due to running out of cost budget, no further validation rules will be run"))
			r.budget = -1
			return
		}
		r.budget -= int64(cost)
		if err != nil {
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "no such overload"):
				r.errs = append(r.errs, meta.Invalid(path, badValue, fmt.Sprintf("'%v': call arguments did not match a supported operator, function or macro signature for rule: %v", msg, ruleErrorString(rule.rule))))
			case strings.HasPrefix(msg, "operation cancelled: actual cost limit exceeded"):
				r.errs = append(r.errs, meta.Invalid(path, badValue, fmt.Sprintf("'%v': no further validation rules will be run due to call cost exceeds limit for rule: %v", msg, ruleErrorString(rule.rule))))
				r.budget = -1
				return
			default:
				r.errs = append(r.errs, meta.Invalid(path, badValue, fmt.Sprintf("%v evaluating rule: %v", msg, ruleErrorString(rule.rule))))
			}
			continue
		}
		if result == types.True {
			continue
		}
		at := path
		if rule.fieldPath != "" {
			at = meta.NewPath(rule.fieldPath)
			if path != rootPath {
				at = path.Child(rule.fieldPath)
			}
		}
		add := func(e *meta.FieldError) {
			if !rule.usesOldSelf {
				if unchanged == nil {
					u := c.unchanged(obj)
					unchanged = &u
				}
				if *unchanged {
					r.warnings = append(r.warnings, e.Error())
					return
				}
			}
			r.errs = append(r.errs, e)
		}
		detail, ok := "", false
		if rule.message != nil {
			msg, fatal, e := v.evalMessage(r, rule, a)
			switch {
			case e == nil:
				detail, ok = msg, true
			case fatal:
				add(meta.Invalid(at, badValue, e.Error()))
				r.budget = -1
				return
			}
		}
		if !ok {
			detail = ruleMessageOrDefault(rule.rule)
		}
		// A failed rule shows the value itself, unless it is an object or
		// a list (kube's field.OmitValueType).
		e := fieldErrorForReason(at, obj, detail, rule.rule.Reason)
		if badValue == "object" || badValue == "array" {
			e.OmitValue()
		}
		add(e)
	}
}

// evalMessage evaluates a messageExpression; fatal errors stop validation
// (the budget ran out), others fall back to the rule's message.
func (v *Validator) evalMessage(r *run, rule compiledRule, act *activation) (string, bool, error) {
	result, details, err := rule.message.ContextEval(r.ctx, act)
	if details == nil || details.ActualCost() == nil {
		return "", true, fmt.Errorf("runtime cost could not be calculated for messageExpression: %q", rule.rule.MessageExpression)
	}
	cost := *details.ActualCost()
	if cost > math.MaxInt64 || int64(cost) > r.budget {
		return "", true, fmt.Errorf("messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run")
	}
	if err != nil {
		if strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded") {
			return "", true, fmt.Errorf("no further validation rules will be run due to call cost exceeds limit for messageExpression: %q", rule.rule.MessageExpression)
		}
		r.budget -= int64(cost)
		return "", false, fmt.Errorf("messageExpression evaluation failed due to: %v", err)
	}
	r.budget -= int64(cost)
	s, ok := result.Value().(string)
	if !ok {
		return "", false, fmt.Errorf("messageExpression failed to convert to string")
	}
	s = strings.TrimSpace(s)
	switch {
	case len(s) > MaxEvaluatedMessageExpressionSizeBytes:
		return "", false, fmt.Errorf("messageExpression beyond allowable length of %d", MaxEvaluatedMessageExpressionSizeBytes)
	case strings.Contains(s, "\n"):
		return "", false, fmt.Errorf("messageExpression should not contain line breaks")
	case s == "":
		return "", false, fmt.Errorf("messageExpression should evaluate to a non-empty string")
	}
	return s, false, nil
}

func ruleMessageOrDefault(r schema.ValidationRule) string {
	if r.Message == "" {
		return "failed rule: " + ruleErrorString(r)
	}
	return strings.TrimSpace(r.Message)
}

func ruleErrorString(r schema.ValidationRule) string {
	if r.Message != "" {
		return strings.TrimSpace(r.Message)
	}
	return strings.TrimSpace(r.Rule)
}

func fieldErrorForReason(p *meta.Path, value any, detail, reason string) *meta.FieldError {
	switch meta.FieldErrorType(reason) {
	case meta.FieldValueForbidden:
		return meta.Forbidden(p, detail)
	case meta.FieldValueRequired:
		return meta.Required(p, detail)
	case meta.FieldValueDuplicate:
		return meta.Duplicate(p, value)
	}
	return meta.Invalid(p, value, detail)
}
