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
	"github.com/apikit-dev/apikit/schema/structural"
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
	var rc ratchet
	if old != nil && v != nil {
		rc.cur = &correlated{val: obj, old: old, schema: v.schema}
	}
	v.validate(r, path, obj, old, rc)
	return Result{Errors: r.errs, Warnings: r.warnings, RemainingBudget: r.budget}
}

type run struct {
	ctx      context.Context
	budget   int64
	errs     meta.FieldErrors
	warnings []string
}

func (r *run) out() bool { return r.budget < 0 }

func (v *Validator) validate(r *run, path *meta.Path, obj, old any, rc ratchet) {
	if v == nil || obj == nil || r.out() {
		return
	}
	if isNilValue(old) {
		old = nil
	}
	v.evaluate(r, path, obj, old, rc)
	for _, a := range v.allOf {
		if r.out() {
			return
		}
		// As kube: an allOf branch's value is not correlated itself, so
		// its failures ratchet only when the nearest correlated ancestor
		// is unchanged (kube-apiserver refuses rules in allOf in a CRD).
		a.validate(r, path, obj, old, ratchet{parent: rc.parent})
	}
	if r.out() {
		return
	}
	switch o := obj.(type) {
	case map[string]any:
		// Every map type kube knows (granular, atomic) pairs a key with
		// the old value at the same key, for oldSelf and for ratcheting.
		oldMap, _ := old.(map[string]any)
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ov := oldMap[k]
			kr := rc.key(k)
			if v.additional != nil {
				v.additional.validate(r, path.Key(k), o[k], ov, kr)
			}
			if pv := v.properties[k]; pv != nil {
				pv.validate(r, path.Child(k), o[k], ov, kr)
			}
			if r.out() {
				return
			}
		}
	case []any:
		if v.items == nil {
			return
		}
		// Only a map list's items have old values (oldSelf), found by
		// their keys.
		oldItems := structural.NewMapListItems(v.schema, old)
		if rc.cur != nil && !rc.cur.indexed {
			// A paired list's old value is this old: its items pair the
			// same way for ratcheting.
			rc.cur.oldItems, rc.cur.indexed = oldItems, true
		}
		for i, item := range o {
			ov, _ := oldItems.Old(item)
			v.items.validate(r, path.Index(i), item, ov, rc.index(i))
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
func (v *Validator) evaluate(r *run, path *meta.Path, obj, old any, rc ratchet) {
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
	// As kube: oldSelf is bound only at a node one of whose rules uses it.
	if old != nil && v.usesOldSelf {
		act.oldSelf, act.hasOldSelf = toVal(old, v.decl), true
		optAct.oldSelf = types.OptionalOf(act.oldSelf)
	}
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
		// A failed rule without oldSelf at a value the update left
		// unchanged is a warning (kube's CRDValidationRatcheting); a
		// transition rule, an evaluation error or an exhausted budget
		// is always an error.
		add := func(e *meta.FieldError) {
			if !rule.usesOldSelf && rc.unchanged() {
				r.warnings = append(r.warnings, e.Error())
				return
			}
			r.errs = append(r.errs, e)
		}
		detail, ok := "", false
		if rule.message != nil {
			// kube evaluates every messageExpression with oldSelf bound
			// as a plain value, even an optionalOldSelf rule's (whose
			// messageExpression is typed with an optional oldSelf): one
			// that calls oldSelf.hasValue() fails, and the message falls
			// back to the rule's message.
			msg, fatal, e := v.evalMessage(r, rule, act)
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

// ReadsObjectMeta reports whether a rule sees the root's apiVersion, kind
// or metadata, or ratchets by them: a rule at the root (or in its allOf),
// or under a root property of those names. Elsewhere they are invisible:
// failures below the root ratchet by values of their own, and a new
// top-level field already makes the root changed. A caller holding them
// apart from the other fields adds them only when this says so.
func (v *Validator) ReadsObjectMeta() bool {
	if v == nil {
		return false
	}
	if len(v.rules) > 0 || len(v.allOf) > 0 {
		return true
	}
	for _, name := range []string{"apiVersion", "kind", "metadata"} {
		if v.properties[name] != nil {
			return true
		}
	}
	return false
}
