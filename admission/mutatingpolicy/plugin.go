package mutatingpolicy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policy"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/cel/library"
	"github.com/apikit-dev/apikit/meta"
)

// PluginName is kube-apiserver's name of the plugin.
const PluginName = "MutatingAdmissionPolicy"

// DefaultMaxObjectBytes bounds a mutated object's JSON when
// Config.MaxObjectBytes is zero: etcd's request limit, as for webhooks.
const DefaultMaxObjectBytes = 3 * 1024 * 1024

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
	// MaxObjectBytes bounds a mutated object's JSON; zero means
	// DefaultMaxObjectBytes.
	MaxObjectBytes int
}

// Plugin is the MutatingAdmissionPolicy admission plugin.
type Plugin struct {
	cfg   Config
	types typeCache
}

// New returns the plugin of cfg.
func New(cfg Config) (*Plugin, error) {
	if cfg.Source == nil {
		return nil, errors.New("MutatingAdmissionPolicy: no Source")
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 10 * time.Second
	}
	if cfg.MaxObjectBytes <= 0 {
		cfg.MaxObjectBytes = DefaultMaxObjectBytes
	}
	return &Plugin{cfg: cfg}, nil
}

// Name returns the plugin's name.
func (*Plugin) Name() string { return PluginName }

// Handles reports that the plugin mutates creates and updates: the other
// operations have no object to mutate.
func (*Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// policyError is a failure of one binding, which its policy's
// failurePolicy decides.
type policyError struct {
	policy, binding string
	failOpen        bool
	reason          meta.StatusReason
	err             error
}

func (e *policyError) Error() string {
	return fmt.Sprintf("policy '%s' with binding '%s' denied request: %v", e.policy, e.binding, e.err)
}

// Admit evaluates the mutations of every binding (in name order) whose
// policy matches a, each seeing the object as the ones before left it. A
// binding of a policy with reinvocationPolicy IfNeeded that ran before a
// later binding changed the object runs once more. Failures the
// failurePolicy does not ignore refuse the write, all of them listed.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if webhook.Exempt(a) || a.Object == nil {
		return nil
	}
	snap, err := p.snapshot(ctx, a)
	if err != nil || len(snap.bindings) == 0 {
		return err
	}
	// The write's namespace, read once, as kube-apiserver does; a
	// namespace that cannot be read refuses the write.
	nsObj, err := policy.NamespaceObject(ctx, p.cfg.Source.namespaces(), a)
	if err != nil {
		return err
	}
	var failures []*policyError
	var invoked []*binding
	reinvoke := map[*binding]bool{}
	for round := 0; round < 2; round++ {
		for _, b := range snap.bindings {
			pol := snap.policies[b.b.Spec.PolicyName]
			if pol == nil || (round == 1 && !reinvoke[b]) {
				continue
			}
			ran, changed, err := p.invoke(ctx, a, pol, b, nsObj)
			var pe *policyError
			switch {
			case errors.As(err, &pe):
				failures = append(failures, pe)
				continue
			case err != nil:
				return err
			}
			if round == 0 && ran {
				if changed {
					for _, prev := range invoked {
						if snap.policies[prev.b.Spec.PolicyName].reinvoke {
							reinvoke[prev] = true
						}
					}
				}
				invoked = append(invoked, b)
			}
		}
		if len(reinvoke) == 0 {
			break
		}
	}
	return refusal(a, failures)
}

// refusal is kube-apiserver's answer to failures under failurePolicy
// Fail: a 403 whose message is the first failure's (its reason, Invalid
// for a failed mutation), each failure a cause.
func refusal(a *admission.Attributes, failures []*policyError) error {
	var se *meta.StatusError
	for _, f := range failures {
		if f.failOpen {
			continue
		}
		msg := f.Error()
		if se == nil {
			se = meta.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("admission request denied by policy"))
			se.ErrStatus.Message = msg
			if f.reason != "" {
				se.ErrStatus.Reason = f.reason
			}
			if se.ErrStatus.Details == nil {
				se.ErrStatus.Details = &meta.StatusDetails{}
			}
		}
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, meta.StatusCause{Message: msg})
	}
	if se == nil {
		return nil
	}
	return se
}

// snapshot returns the policies in effect, waiting for the first sync as
// kube-apiserver's plugin waits for its informers.
func (p *Plugin) snapshot(ctx context.Context, a *admission.Attributes) (*snapshot, error) {
	src := p.cfg.Source
	select {
	case <-src.synced:
		return src.snap.Load(), nil
	default:
	}
	t := time.NewTimer(p.cfg.SyncTimeout)
	defer t.Stop()
	select {
	case <-src.synced:
		return src.snap.Load(), nil
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, meta.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("not yet ready to handle request"))
}

// invoke runs one binding of pol on a. It reports whether the binding
// matched and ran, and whether it changed the object; a *policyError is a
// failure for the failurePolicy, any other error refuses the write.
func (p *Plugin) invoke(ctx context.Context, a *admission.Attributes, pol *compiled, b *binding, nsObj map[string]any) (ran, changed bool, err error) {
	fail := func(reason meta.StatusReason, err error) (bool, bool, error) {
		return false, false, &policyError{policy: pol.policy.Name, binding: b.b.Name, failOpen: pol.failOpen, reason: reason, err: err}
	}
	if pol.match == nil {
		return false, false, nil
	}
	v, err := pol.match.matches(ctx, p.cfg.Namespaces, a)
	if err != nil {
		return fail("", err)
	}
	if v == nil {
		return false, false, nil
	}
	if b.match != nil {
		bv, err := b.match.matches(ctx, p.cfg.Namespaces, a)
		if err != nil {
			return fail("", err)
		}
		if bv == nil {
			return false, false, nil
		}
	}
	if pol.err != nil {
		return fail("", pol.err)
	}
	if pol.policy.Spec.ParamKind != nil {
		return fail(meta.StatusReasonInvalid, errors.New("paramKind is not supported by this server yet"))
	}
	vars, err := p.vars(ctx, a, v, nsObj)
	if err != nil {
		return fail(meta.StatusReasonInvalid, err)
	}
	// matchConditions: any false skips the binding; otherwise an error
	// goes to the failurePolicy. They see no variables.
	budget := int64(cel.RuntimeCELCostBudget)
	var condErrs []error
	for _, mc := range pol.matchConditions {
		val, err := eval(ctx, mc.expr, vars, &budget)
		if err != nil {
			condErrs = append(condErrs, fmt.Errorf("failed to evaluate match condition %q: %w", mc.name, err))
			continue
		}
		if val == types.False {
			return false, false, nil
		}
	}
	if len(condErrs) > 0 {
		return fail(meta.StatusReasonInvalid, errors.Join(condErrs...))
	}
	for i, m := range pol.mutations {
		if i > 0 && changed {
			// The next mutation sees this one's result.
			if vars, err = p.vars(ctx, a, v, nsObj); err != nil {
				return fail(meta.StatusReasonInvalid, err)
			}
		}
		// Each mutation has its own budget, for its variables too, as in
		// kube-apiserver.
		budget := int64(cel.RuntimeCELCostBudget)
		evaluateVariables(ctx, pol.variables, vars, &budget)
		val, err := eval(ctx, m.expr, vars, &budget)
		if err != nil {
			return fail(meta.StatusReasonInvalid, err)
		}
		c, err := p.mutate(a, v, m.patchType, val)
		var se *meta.StatusError
		if errors.As(err, &se) {
			return false, false, err
		}
		if err != nil {
			return fail(meta.StatusReasonInvalid, err)
		}
		changed = changed || c
	}
	return true, changed, nil
}

// vars are the variables of a binding's expressions on a as matched in v;
// params are null.
func (p *Plugin) vars(ctx context.Context, a *admission.Attributes, v *version, nsObj map[string]any) (map[string]any, error) {
	toVersion := v.toVersion
	if v.own {
		toVersion = nil
	}
	vars, err := webhook.ExpressionVars(a, v.kind, v.resource, toVersion)
	if err != nil {
		return nil, err
	}
	vars[cel.ParamsVarName] = nil
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
	return vars, nil
}

// evaluateVariables sets vars' variables, in order, each seeing those
// before it; one that fails is an error value, which fails only the
// expressions reading it.
func evaluateVariables(ctx context.Context, variables []namedExpr, vars map[string]any, budget *int64) {
	if len(variables) == 0 {
		return
	}
	evaluated := map[ref.Val]ref.Val{}
	for _, nv := range variables {
		vars[cel.VariablesVarName] = types.NewRefValMap(types.DefaultTypeAdapter, evaluated)
		val, err := eval(ctx, nv.expr, vars, budget)
		if err != nil {
			val = types.NewErr("%s", err.Error())
		}
		evaluated[types.String(nv.name)] = val
	}
	vars[cel.VariablesVarName] = types.NewRefValMap(types.DefaultTypeAdapter, evaluated)
}

// eval evaluates e within what is left of budget, with kube's messages.
func eval(ctx context.Context, e *cel.Expression, vars map[string]any, budget *int64) (ref.Val, error) {
	val, cost, err := e.Eval(ctx, vars, *budget)
	*budget -= cost
	if errors.Is(err, cel.ErrBudget) || *budget < 0 {
		return nil, errors.New("validation failed due to running out of cost budget, no further validation rules will be run")
	}
	if err != nil {
		return nil, fmt.Errorf("expression '%s' resulted in error: %w", e.Source, err)
	}
	return val, nil
}
