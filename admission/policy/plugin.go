package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
)

// PluginName is kube-apiserver's name of the plugin.
const PluginName = "ValidatingAdmissionPolicy"

// FailureAnnotation is the audit annotation of failed validations bound
// with the Audit action.
const FailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// Config configures the plugin.
type Config struct {
	// Source holds the policies and bindings in effect. Required.
	Source *Source
	// Authorizer answers the authorizer variable's checks; nil makes them
	// errors.
	Authorizer authz.Authorizer
	// Namespaces gives namespace labels to namespaceSelectors; nil finds
	// every namespace unlabelled.
	Namespaces webhook.NamespaceLabels
	// SyncTimeout is how long a write waits for the Source to sync before
	// it is refused; zero means 10 s.
	SyncTimeout time.Duration
}

// Plugin is the ValidatingAdmissionPolicy admission plugin.
type Plugin struct{ cfg Config }

// New returns the plugin of cfg.
func New(cfg Config) (*Plugin, error) {
	if cfg.Source == nil {
		return nil, errors.New("ValidatingAdmissionPolicy: no Source")
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 10 * time.Second
	}
	return &Plugin{cfg: cfg}, nil
}

// Name returns the plugin's name.
func (*Plugin) Name() string { return PluginName }

// Handles reports that policies may match every operation.
func (*Plugin) Handles(admission.Operation) bool { return true }

// decision is one failed validation (or a failure the policy's
// failurePolicy turns into one).
type decision struct {
	message string
	reason  meta.StatusReason
	index   int
	// config marks a configuration error (a paramKind not served, params
	// missing), which denies whatever the validationActions; policyOnly
	// one of the policy, not of a binding.
	config, policyOnly bool
}

// failureValue is one entry of FailureAnnotation, in kube's field order.
type failureValue struct {
	Message           string                          `json:"message"`
	Policy            string                          `json:"policy"`
	Binding           string                          `json:"binding"`
	ExpressionIndex   int                             `json:"expressionIndex"`
	ValidationActions []registration.ValidationAction `json:"validationActions"`
}

// Validate evaluates every binding whose policy matches a. The first
// denial (bindings in name order) refuses the write; failures bound with
// Warn and Audit become warnings and an audit annotation.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if webhook.Exempt(a) {
		return nil
	}
	snap, err := p.cfg.Source.set.Wait(ctx, a, p.cfg.SyncTimeout)
	if err != nil || len(snap.Bindings) == 0 {
		return err
	}
	var denied error
	var audits []failureValue
	// Audit annotations by key (the policy's name and its key), each
	// value once.
	annotations := map[string][]string{}
	// One set of variables per version the write is matched in.
	varsByVersion := map[varsKey]map[string]any{}
	for _, b := range snap.Bindings {
		h := snap.Policies[b.Binding.Spec.PolicyName]
		if h == nil {
			continue
		}
		decisions, err := p.evaluate(ctx, a, h, b, varsByVersion, annotations)
		if err != nil {
			return err
		}
		actions := b.Binding.Spec.ValidationActions
		for _, d := range decisions {
			// A configuration error refuses whatever the actions; only
			// the first refusal is answered.
			if d.config {
				if denied == nil {
					binding := b.Binding.Name
					if d.policyOnly {
						binding = ""
					}
					denied = denial(a, h.Policy.Name, binding, d)
				}
				continue
			}
			if denied == nil && slices.Contains(actions, registration.Deny) {
				denied = denial(a, h.Policy.Name, b.Binding.Name, d)
			}
			if slices.Contains(actions, registration.Warn) {
				admission.AddWarning(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", h.Policy.Name, b.Binding.Name, d.message))
			}
			if slices.Contains(actions, registration.Audit) {
				audits = append(audits, failureValue{Message: d.message, Policy: h.Policy.Name, Binding: b.Binding.Name,
					ExpressionIndex: d.index, ValidationActions: actions})
			}
		}
	}
	for _, k := range sortedKeys(annotations) {
		// As kube-apiserver: several bindings giving one key different
		// values join them.
		vs := slices.Compact(slices.Sorted(slices.Values(annotations[k])))
		audit.AddAnnotation(ctx, k, strings.Join(vs, ", "))
	}
	if len(audits) > 0 {
		if v, err := json.Marshal(audits); err == nil {
			audit.AddAnnotation(ctx, FailureAnnotation, string(v))
		}
	}
	return denied
}

// sortedKeys are m's keys in order; none without a sort.
func sortedKeys(m map[string][]string) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// denial is kube-apiserver's refusal: a Forbidden-worded Status whose
// reason (and code) is the validation's, Invalid by default, with the
// message as its one cause.
func denial(a *admission.Attributes, policy, binding string, d decision) error {
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", policy, binding, d.message)
	if binding == "" {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", policy, d.message)
	}
	err := meta.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New(msg))
	reason := d.reason
	if reason == "" {
		reason = meta.StatusReasonInvalid
	}
	err.ErrStatus.Reason = reason
	err.ErrStatus.Code = int32(reasonToCode(reason))
	if err.ErrStatus.Details == nil {
		err.ErrStatus.Details = &meta.StatusDetails{}
	}
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, meta.StatusCause{Message: msg})
	return err
}

func reasonToCode(r meta.StatusReason) int {
	switch r {
	case meta.StatusReasonForbidden:
		return http.StatusForbidden
	case meta.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	case meta.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	}
	return http.StatusUnprocessableEntity
}

// evaluate runs binding b of policy h on a, once per param its paramRef
// selects, and returns its failed validations, errors included when the
// failurePolicy is Fail. An error is a write to refuse as it is (its
// namespace not found).
func (p *Plugin) evaluate(ctx context.Context, a *admission.Attributes, h *hook, b *bound,
	varsByVersion map[varsKey]map[string]any, annotations map[string][]string) ([]decision, error) {
	pol := h.Compiled
	failure := func(err error) []decision {
		if pol.failOpen {
			return nil
		}
		return []decision{{message: err.Error()}}
	}
	v, params, err := policyset.Dispatch(ctx, p.cfg.Namespaces, h, b, a)
	var ce *policyset.ConfigError
	switch {
	case errors.As(err, &ce):
		// kube-apiserver's configuration error refuses the write whatever
		// the binding's validationActions (unless the failurePolicy is
		// Ignore), in the policy's name alone when it is the policy's.
		if pol.failOpen {
			return nil, nil
		}
		return []decision{{message: ce.Error(), config: true, policyOnly: !ce.OfBinding}}, nil
	case err != nil:
		return failure(err), nil
	case v == nil:
		return nil, nil
	}
	if pol.err != nil {
		return failure(pol.err), nil
	}
	nsObj, err := p.cfg.Source.set.NamespaceObject(ctx, a)
	if err != nil {
		return nil, err
	}
	var out []decision
	for _, param := range params {
		ds, err := p.evaluateParam(ctx, a, h, v, param, nsObj, varsByVersion, annotations)
		if err != nil {
			return append(out, failure(err)...), nil
		}
		out = append(out, ds...)
	}
	return out, nil
}

// varsKey is a set of variables built for a write: as matched in a
// version, with or without request.
type varsKey struct {
	resource meta.GroupVersionResource
	request  bool
}

// evaluateParam runs h's expressions on a, matched in version v, with
// one param (nil without) and namespace object.
func (p *Plugin) evaluateParam(ctx context.Context, a *admission.Attributes, h *hook, v *policyset.Version, param *policyset.Param, nsObj map[string]any,
	varsByVersion map[varsKey]map[string]any, annotations map[string][]string) ([]decision, error) {
	pol := h.Compiled
	key := varsKey{v.Resource, pol.Reads.Request}
	vars, ok := varsByVersion[key]
	if !ok {
		var err error
		if vars, err = v.Vars(a, pol.Reads); err != nil {
			return nil, err
		}
		varsByVersion[key] = vars
	}
	// The write's variables are shared by the policies and params
	// evaluated on it: each sets those it reads (params, namespaceObject,
	// authorizer, variables) over the last one's, and reads no other.
	policyset.SetOptional(ctx, vars, a, param, nsObj, p.cfg.Authorizer, pol.Reads)
	budget := int64(cel.RuntimeCELCostBudget)
	eval := func(e *cel.Expression) (ref.Val, error) { return policyset.Eval(ctx, e, vars, &budget) }
	// The variables come first: the matchConditions may read them.
	pol.SetVariables(ctx, vars, &budget)
	// matchConditions: any false skips the binding; otherwise an error
	// goes to the failurePolicy.
	if ok, err := pol.Matches(ctx, vars, &budget); !ok {
		return nil, err
	}
	var out []decision
	validations := pol.validations
	if pol.allPass != nil && passes(ctx, pol.allPass, vars, &budget) {
		validations = nil
	}
	for i, val := range validations {
		res, err := eval(val.expr)
		if err != nil {
			if !pol.failOpen {
				out = append(out, decision{message: err.Error(), index: i})
			}
			continue
		}
		if res == types.True {
			continue
		}
		d := decision{message: fallbackMessage(val.v), index: i}
		if val.v.Reason != nil {
			d.reason = *val.v.Reason
		}
		if val.message != nil {
			if m, err := eval(val.message); err == nil {
				if s, ok := m.Value().(string); ok {
					s = strings.TrimSpace(s)
					if s != "" && len(s) <= cel.MaxEvaluatedMessageExpressionSizeBytes && !strings.ContainsAny(s, "\r\n") {
						d.message = s
					}
				}
			}
		}
		out = append(out, d)
	}
	// auditAnnotations: a string value is published, null none; an
	// error goes to the failurePolicy.
	for _, aa := range pol.auditAnnotations {
		res, err := eval(aa.Expr)
		if err != nil {
			if !pol.failOpen {
				out = append(out, decision{message: err.Error()})
			}
			continue
		}
		if s, ok := res.Value().(string); ok {
			k := h.Policy.Name + "/" + aa.Name
			annotations[k] = append(annotations[k], s)
		}
	}
	return out, nil
}

// passes reports whether the validations' conjunction e is true within
// *budget, which it then lowers by its cost, what the validations one by
// one would have cost. Otherwise (a validation false, an error, the
// budget or the per-call limit reached) the budget is left as it was:
// the validations are evaluated one by one, as kube-apiserver does, for
// their decisions and messages.
func passes(ctx context.Context, e *cel.Expression, vars map[string]any, budget *int64) bool {
	val, cost, err := e.Eval(ctx, vars, *budget)
	if err != nil || val != types.True {
		return false
	}
	*budget -= cost
	return true
}

// fallbackMessage is the message of a failed validation without a usable
// messageExpression.
func fallbackMessage(v registration.Validation) string {
	if v.Message != "" {
		return v.Message
	}
	return "failed expression: " + strings.TrimSpace(v.Expression)
}
