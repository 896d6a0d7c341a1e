package policyset

import (
	"context"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/webhook"
)

// ConfigError is kube-apiserver's configuration error of a policy (its
// paramKind not served) or of a binding (its params missing or not
// usable): a write it matches is refused whatever else the binding says,
// unless the policy's failurePolicy is Ignore.
type ConfigError struct {
	// OfBinding is an error of the binding; otherwise of the policy.
	OfBinding bool
	Err       error
}

func (e *ConfigError) Error() string {
	if e.OfBinding {
		return "failed to configure binding: " + e.Err.Error()
	}
	return "failed to configure policy: " + e.Err.Error()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// MatchError is a matcher that could not decide (a selector that does not
// parse, a namespace whose labels cannot be read).
type MatchError struct {
	// OfBinding is an error of the binding's matchResources; otherwise of
	// the policy's matchConstraints.
	OfBinding bool
	Err       error
}

func (e *MatchError) Error() string { return e.Err.Error() }

func (e *MatchError) Unwrap() error { return e.Err }

// Dispatch decides whether binding b of policy h applies to a, as
// kube-apiserver's policy dispatcher does: the policy's matchConstraints,
// then its paramKind (a *ConfigError when no resource serves it), then
// the binding's matchResources, then the params its paramRef selects (a
// *ConfigError when they are missing with parameterNotFoundAction Deny or
// cannot be read). It returns the version a matched in, nil when the
// binding does not apply, and the params to evaluate the policy with, one
// run each: a single nil for a policy without paramKind or a binding
// without paramRef, none when the params are missing and the binding
// allows that. A matcher's failure is a *MatchError.
func Dispatch[P Policy, B Binding, C any](ctx context.Context, namespaces webhook.NamespaceLabels, h *Hook[P, C], b *Bound[B], a *admission.Attributes) (*Version, []*Param, error) {
	if h.Match == nil {
		return nil, nil, nil
	}
	v, err := h.Match.Matches(ctx, namespaces, a)
	if err != nil {
		return nil, nil, &MatchError{Err: err}
	}
	if v == nil {
		return nil, nil, nil
	}
	if h.params != nil && h.params.err != nil {
		return nil, nil, &ConfigError{Err: h.params.err}
	}
	if b.Match != nil {
		bv, err := b.Match.Matches(ctx, namespaces, a)
		if err != nil {
			return nil, nil, &MatchError{OfBinding: true, Err: err}
		}
		if bv == nil {
			return nil, nil, nil
		}
	}
	params, err := h.params.collect(ctx, b.Binding.GetParamRef(), a.Namespace)
	if err != nil {
		return nil, nil, &ConfigError{OfBinding: true, Err: err}
	}
	return v, params, nil
}
