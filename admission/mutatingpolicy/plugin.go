package mutatingpolicy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/cel"
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
	// binding is empty for an error of the policy itself.
	policy, binding string
	failOpen        bool
	reason          meta.StatusReason
	err             error
}

func (e *policyError) Error() string {
	if e.binding == "" {
		return fmt.Sprintf("policy %q denied request: %v", e.policy, e.err)
	}
	return fmt.Sprintf("policy '%s' with binding '%s' denied request: %v", e.policy, e.binding, e.err)
}

// invocation is kube-apiserver's key of one run of a policy: its binding
// (which names the policy) and param.
type invocation struct {
	binding, paramNamespace, paramName string
}

// Admit evaluates the mutations of every binding (in name order) whose
// policy matches a, once per param its paramRef selects, each run seeing
// the object as the ones before left it. A run of a policy with
// reinvocationPolicy IfNeeded that came before a later run changed the
// object runs once more. Failures the failurePolicy does not ignore
// refuse the write, all of them listed.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if webhook.Exempt(a) || a.Object == nil {
		return nil
	}
	snap, err := p.cfg.Source.set.Wait(ctx, a, p.cfg.SyncTimeout)
	if err != nil || len(snap.Bindings) == 0 {
		return err
	}
	// The write's namespace, read once, as kube-apiserver does; a
	// namespace that cannot be read refuses the write.
	nsObj, err := p.cfg.Source.set.NamespaceObject(ctx, a)
	if err != nil {
		return err
	}
	var failures []*policyError
	var invoked []invocation
	reinvoke := map[invocation]bool{}
	for round := 0; round < 2; round++ {
		for _, b := range snap.Bindings {
			h := snap.Policies[b.Binding.Spec.PolicyName]
			if h == nil {
				continue
			}
			v, params, err := policyset.Dispatch(ctx, p.cfg.Namespaces, h, b, a)
			if err != nil {
				if round == 0 {
					failures = append(failures, dispatchFailure(h, b, err))
				}
				continue
			}
			if v == nil {
				continue
			}
			for _, param := range params {
				key := invocation{binding: b.Binding.Name}
				if param != nil {
					key.paramNamespace, key.paramName = param.Namespace, param.Name
				}
				if round == 1 && !reinvoke[key] {
					continue
				}
				ran, changed, err := p.invoke(ctx, a, h, b, v, param, nsObj)
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
							reinvoke[prev] = true
						}
					}
					if h.Compiled.reinvoke {
						invoked = append(invoked, key)
					}
				}
			}
		}
		if len(reinvoke) == 0 {
			break
		}
	}
	return refusal(a, failures)
}

// dispatchFailure is kube-apiserver's configuration error of a policy or
// binding that could not be matched or given its params.
func dispatchFailure(h *hook, b *bound, err error) *policyError {
	pe := &policyError{policy: h.Policy.Name, binding: b.Binding.Name, failOpen: h.Compiled.failOpen, err: err}
	var ce *policyset.ConfigError
	var me *policyset.MatchError
	switch {
	case errors.As(err, &ce):
		if !ce.OfBinding {
			pe.binding = ""
		}
	case errors.As(err, &me):
		pe.err = &policyset.ConfigError{OfBinding: me.OfBinding, Err: me.Err}
		if !me.OfBinding {
			pe.binding = ""
		}
	}
	return pe
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

// invoke runs the mutations of policy h, bound by b, on a as matched in
// v, with one param (nil without). It reports whether the policy's
// matchConditions matched and it ran, and whether it changed the object;
// a *policyError is a failure for the failurePolicy, any other error
// refuses the write.
func (p *Plugin) invoke(ctx context.Context, a *admission.Attributes, h *hook, b *bound, v *policyset.Version, param *policyset.Param,
	nsObj map[string]any) (ran, changed bool, err error) {
	pol := h.Compiled
	fail := func(reason meta.StatusReason, err error) (bool, bool, error) {
		return false, false, &policyError{policy: h.Policy.Name, binding: b.Binding.Name, failOpen: pol.failOpen, reason: reason, err: err}
	}
	if pol.err != nil {
		return fail("", pol.err)
	}
	vars, err := p.vars(ctx, a, v, param, nsObj)
	if err != nil {
		return fail(meta.StatusReasonInvalid, err)
	}
	// matchConditions: any false skips the run; otherwise an error goes
	// to the failurePolicy. They see no variables.
	budget := int64(cel.RuntimeCELCostBudget)
	if ok, err := pol.Matches(ctx, vars, &budget); err != nil {
		return fail(meta.StatusReasonInvalid, err)
	} else if !ok {
		return false, false, nil
	}
	for i, m := range pol.mutations {
		if i > 0 && changed {
			// The next mutation sees this one's result.
			if vars, err = p.vars(ctx, a, v, param, nsObj); err != nil {
				return fail(meta.StatusReasonInvalid, err)
			}
		}
		// Each mutation has its own budget, for its variables too, as in
		// kube-apiserver.
		budget := int64(cel.RuntimeCELCostBudget)
		pol.SetVariables(ctx, vars, &budget)
		val, err := policyset.Eval(ctx, m.expr, vars, &budget)
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

// vars are the variables of a run's expressions on a as matched in v.
func (p *Plugin) vars(ctx context.Context, a *admission.Attributes, v *policyset.Version, param *policyset.Param, nsObj map[string]any) (map[string]any, error) {
	vars, err := v.Vars(a, policyset.ReadsAll)
	if err != nil {
		return nil, err
	}
	policyset.SetOptional(ctx, vars, a, param, nsObj, p.cfg.Authorizer, policyset.ReadsAll)
	return vars, nil
}
