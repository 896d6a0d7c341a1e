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
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/cel/library"
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
	snap, err := p.snapshot(ctx, a)
	if err != nil || len(snap.bindings) == 0 {
		return err
	}
	var denied error
	var audits []failureValue
	// Audit annotations by key (the policy's name and its key), each
	// value once.
	annotations := map[string][]string{}
	// One set of variables per version the write is matched in.
	varsByVersion := map[meta.GroupVersionResource]map[string]any{}
	for _, b := range snap.bindings {
		pol := snap.policies[b.b.Spec.PolicyName]
		if pol == nil {
			continue
		}
		decisions, err := p.evaluate(ctx, a, pol, b, snap.params[pol.policy.Name], varsByVersion, annotations)
		if err != nil {
			return err
		}
		for _, d := range decisions {
			// A configuration error refuses whatever the actions; only
			// the first refusal is answered.
			if d.config {
				if denied == nil {
					binding := b.b.Name
					if d.policyOnly {
						binding = ""
					}
					denied = denial(a, pol.policy.Name, binding, d)
				}
				continue
			}
			if b.deny && denied == nil {
				denied = denial(a, pol.policy.Name, b.b.Name, d)
			}
			if b.warn {
				admission.AddWarning(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", pol.policy.Name, b.b.Name, d.message))
			}
			if b.audit {
				audits = append(audits, failureValue{Message: d.message, Policy: pol.policy.Name, Binding: b.b.Name,
					ExpressionIndex: d.index, ValidationActions: b.b.Spec.ValidationActions})
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
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

// snapshot returns the policies in effect, waiting for the first sync as
// kube-apiserver's plugin waits for its informers.
func (p *Plugin) snapshot(ctx context.Context, a *admission.Attributes) (*snapshot, error) {
	if s := p.cfg.Source.snap.Load(); s != nil && isClosed(p.cfg.Source.synced) {
		return s, nil
	}
	t := time.NewTimer(p.cfg.SyncTimeout)
	defer t.Stop()
	select {
	case <-p.cfg.Source.synced:
		return p.cfg.Source.snap.Load(), nil
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, meta.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("not yet ready to handle request"))
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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

// version is where a matcher matched a write: the request's resource, or
// an equivalent's.
type version struct {
	kind      meta.GroupVersionKind
	resource  meta.GroupVersionResource
	toVersion func(meta.Object) (meta.Object, error)
}

// matches is kube-apiserver's policy matcher: namespace and object
// selectors, then excludeResourceRules, then resourceRules (none: all),
// in the request's version or, with matchPolicy Equivalent, another.
func (p *Plugin) matches(ctx context.Context, m *matcher, a *admission.Attributes) (*version, error) {
	if m.err != nil {
		return nil, m.err
	}
	nsOK, nsErr := webhook.NamespaceMatches(ctx, p.cfg.Namespaces, m.namespaceSelector, a)
	if nsErr == nil && !nsOK {
		return nil, nil
	}
	if !webhook.ObjectMatches(m.objectSelector, a) {
		return nil, nil
	}
	own := &version{kind: a.Kind, resource: a.Resource}
	if v := m.find(m.m.ExcludeResourceRules, a, own); v != nil {
		return nil, nil
	}
	v := own
	if len(m.m.ResourceRules) > 0 {
		v = m.find(m.m.ResourceRules, a, own)
	}
	if v == nil {
		return nil, nil
	}
	return v, nsErr
}

// find returns the first version of a that rules match.
func (m *matcher) find(rules []registration.NamedRuleWithOperations, a *admission.Attributes, own *version) *version {
	if namedRulesMatch(rules, a, a.Resource) {
		return own
	}
	if m.equivalent {
		for _, e := range a.Equivalents {
			if namedRulesMatch(rules, a, e.Resource) {
				return &version{kind: e.Kind, resource: e.Resource, toVersion: e.ToVersion}
			}
		}
	}
	return nil
}

func namedRulesMatch(rules []registration.NamedRuleWithOperations, a *admission.Attributes, gvr meta.GroupVersionResource) bool {
	for i := range rules {
		r := &rules[i]
		if webhook.RuleMatches(&r.RuleWithOperations, a, gvr) && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.Name)) {
			return true
		}
	}
	return false
}

// evaluate runs one binding of pol on a, once per param its paramRef
// selects, and returns its failed validations, errors included when the
// failurePolicy is Fail. An error is a write to refuse as it is (its
// namespace not found).
func (p *Plugin) evaluate(ctx context.Context, a *admission.Attributes, pol *compiled, b *binding, ps *paramState,
	varsByVersion map[meta.GroupVersionResource]map[string]any, annotations map[string][]string) ([]decision, error) {
	failure := func(err error) []decision {
		if pol.failOpen {
			return nil
		}
		return []decision{{message: err.Error()}}
	}
	// configFailure is kube-apiserver's configuration error: it refuses
	// the write whatever the binding's validationActions (unless the
	// failurePolicy is Ignore), in the policy's name alone when it is the
	// policy's.
	configFailure := func(err error, ofBinding bool) []decision {
		if pol.failOpen {
			return nil
		}
		if ofBinding {
			return []decision{{message: "failed to configure binding: " + err.Error(), config: true}}
		}
		return []decision{{message: "failed to configure policy: " + err.Error(), config: true, policyOnly: true}}
	}
	if pol.match == nil {
		return nil, nil
	}
	v, err := p.matches(ctx, pol.match, a)
	if err != nil {
		return failure(err), nil
	}
	if v == nil {
		return nil, nil
	}
	if ps != nil && ps.err != nil {
		return configFailure(ps.err, false), nil
	}
	if b.match != nil {
		bv, err := p.matches(ctx, b.match, a)
		if err != nil {
			return failure(err), nil
		}
		if bv == nil {
			return nil, nil
		}
	}
	params, err := ps.collect(ctx, b.b.Spec.ParamRef, a.Namespace)
	if err != nil {
		return configFailure(err, true), nil
	}
	if pol.err != nil {
		return failure(pol.err), nil
	}
	nsObj, err := p.namespaceObject(ctx, a)
	if err != nil {
		return nil, err
	}
	var out []decision
	for _, param := range params {
		ds, err := p.evaluateParam(ctx, a, pol, v, param, nsObj, varsByVersion, annotations)
		if err != nil {
			return append(out, failure(err)...), nil
		}
		out = append(out, ds...)
	}
	return out, nil
}

// evaluateParam runs pol's expressions on a, matched in version v, with
// one param (nil without) and namespace object.
func (p *Plugin) evaluateParam(ctx context.Context, a *admission.Attributes, pol *compiled, v *version, param, nsObj map[string]any,
	varsByVersion map[meta.GroupVersionResource]map[string]any, annotations map[string][]string) ([]decision, error) {
	base, ok := varsByVersion[v.resource]
	if !ok {
		var err error
		if base, err = webhook.ExpressionVars(a, v.kind, v.resource, v.toVersion); err != nil {
			return nil, err
		}
		varsByVersion[v.resource] = base
	}
	vars := make(map[string]any, len(base)+5)
	for k, val := range base {
		vars[k] = val
	}
	// A nil map would be an empty map to CEL: null is an untyped nil.
	vars[cel.ParamsVarName] = nil
	if param != nil {
		vars[cel.ParamsVarName] = param
	}
	vars[cel.NamespaceObjectVarName] = nil
	if nsObj != nil {
		vars[cel.NamespaceObjectVarName] = nsObj
	}
	if p.cfg.Authorizer != nil {
		vars[cel.AuthorizerVarName] = library.NewAuthorizer(ctx, p.cfg.Authorizer, a.User)
		vars[cel.RequestResourceVarName] = library.NewResourceCheck(ctx, p.cfg.Authorizer, a.User, authz.Attributes{
			APIGroup: a.Resource.Group, APIVersion: a.Resource.Version, Resource: a.Resource.Resource,
			Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name})
	}
	budget := int64(cel.RuntimeCELCostBudget)
	eval := func(e *cel.Expression) (ref.Val, error) {
		val, cost, err := e.Eval(ctx, vars, budget)
		budget -= cost
		if errors.Is(err, cel.ErrBudget) || budget < 0 {
			return nil, errors.New("validation failed due to running out of cost budget, no further validation rules will be run")
		}
		if err != nil {
			return nil, fmt.Errorf("expression '%s' resulted in error: %w", e.Source, err)
		}
		return val, nil
	}
	// Variables are evaluated in order, each seeing those before it; one
	// that fails is an error value, which fails only the expressions
	// reading it.
	if len(pol.variables) > 0 {
		evaluated := map[ref.Val]ref.Val{}
		for _, nv := range pol.variables {
			vars[cel.VariablesVarName] = types.NewRefValMap(types.DefaultTypeAdapter, evaluated)
			val, err := eval(nv.expr)
			if err != nil {
				val = types.NewErr("%s", err.Error())
			}
			evaluated[types.String(nv.name)] = val
		}
		vars[cel.VariablesVarName] = types.NewRefValMap(types.DefaultTypeAdapter, evaluated)
	}
	// matchConditions: any false skips the binding; otherwise an error
	// goes to the failurePolicy.
	var condErrs []error
	for _, mc := range pol.matchConditions {
		val, err := eval(mc.expr)
		if err != nil {
			condErrs = append(condErrs, fmt.Errorf("failed to evaluate match condition %q: %w", mc.name, err))
			continue
		}
		if val == types.False {
			return nil, nil
		}
	}
	if len(condErrs) > 0 {
		return nil, errors.Join(condErrs...)
	}
	var out []decision
	for i, val := range pol.validations {
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
		res, err := eval(aa.expr)
		if err != nil {
			if !pol.failOpen {
				out = append(out, decision{message: err.Error()})
			}
			continue
		}
		if s, ok := res.Value().(string); ok {
			k := pol.policy.Name + "/" + aa.name
			annotations[k] = append(annotations[k], s)
		}
	}
	return out, nil
}

// fallbackMessage is the message of a failed validation without a usable
// messageExpression.
func fallbackMessage(v registration.Validation) string {
	if v.Message != "" {
		return v.Message
	}
	return "failed expression: " + strings.TrimSpace(v.Expression)
}
