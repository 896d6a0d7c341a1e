package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/schema/structural"
)

// maxCompiled bounds the compiled-program cache; a fresh one is started
// when it is full.
const maxCompiled = 1024

// celConditions evaluates matchConditions with package cel over object,
// oldObject and request, as kube-apiserver does; each expression is
// compiled once. The CEL environment is built at the first expression
// compiled, not with the evaluator: every server has the webhook plugins,
// few have webhooks with matchConditions, and the environment (cel-go's
// standard library and the Kubernetes extensions) is ~0.2 MB of heap.
type celConditions struct {
	mu       sync.Mutex
	compiled map[string]*cel.Expression
}

// NewCELMatchConditions returns the matchConditions evaluator of package
// cel. It builds nothing yet; an environment that fails to build fails each
// condition it would compile (the webhook's failurePolicy decides). The
// error is always nil.
func NewCELMatchConditions() (MatchConditions, error) {
	return &celConditions{compiled: map[string]*cel.Expression{}}, nil
}

func (c *celConditions) program(expr string) (*cel.Expression, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.compiled[expr]; ok {
		return p, nil
	}
	compiler, err := registration.MatchConditionCompiler()
	if err != nil {
		return nil, err
	}
	p, err := compiler.Compile(expr, types.BoolType)
	if err != nil {
		return nil, err
	}
	if len(c.compiled) >= maxCompiled {
		c.compiled = map[string]*cel.Expression{}
	}
	c.compiled[expr] = p
	return p, nil
}

// Match is false when any condition is false; otherwise an error of any
// condition is returned (the webhook's failurePolicy decides), as kube's
// matcher does.
func (c *celConditions) Match(ctx context.Context, conds []registration.MatchCondition, req *AdmissionRequest) (bool, error) {
	vars, err := requestVars(req)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, mc := range conds {
		p, err := c.program(mc.Expression)
		if err != nil {
			errs = append(errs, fmt.Errorf("compilation failed for match condition %q: %w", mc.Name, err))
			continue
		}
		v, _, err := p.Eval(ctx, vars, cel.PerCallLimit)
		if err != nil {
			errs = append(errs, fmt.Errorf("match condition %q: expression '%s' resulted in error: %w", mc.Name, mc.Expression, err))
			continue
		}
		if b, ok := v.Value().(bool); !ok {
			errs = append(errs, fmt.Errorf("match condition %q: expression '%s' did not evaluate to a bool", mc.Name, mc.Expression))
		} else if !b {
			return false, nil
		}
	}
	return len(errs) == 0, errors.Join(errs...)
}

// requestVars are object, oldObject and request as CEL sees them, from
// a request whose objects are JSON: decoded as schema/structural decodes
// them, once, and shared by request.object and object.
func requestVars(req *AdmissionRequest) (map[string]any, error) {
	decode := func(raw []byte) (any, error) {
		if len(raw) == 0 {
			return nil, nil
		}
		v, err := structural.DecodeJSON(raw)
		if err != nil {
			return nil, err
		}
		return types.DefaultTypeAdapter.NativeToValue(v), nil
	}
	obj, err := decode(req.Object)
	if err != nil {
		return nil, err
	}
	old, err := decode(req.OldObject)
	if err != nil {
		return nil, err
	}
	opts, err := decode(req.Options)
	if err != nil {
		return nil, fmt.Errorf("decoding the options: %w", err)
	}
	return expressionVars(req, obj, old, opts), nil
}

// celRequest is the request CEL reads: req's fields, its objects and
// options given as values (CEL values or Go structs) instead of JSON.
// Its fields hide the embedded request's of the same JSON names.
type celRequest struct {
	*AdmissionRequest
	Object    any `json:"object,omitempty"`
	OldObject any `json:"oldObject,omitempty"`
	Options   any `json:"options,omitempty"`
}

// expressionVars are object, oldObject and request for req with the
// given objects and options (nil: none).
func expressionVars(req *AdmissionRequest, obj, old, opts any) map[string]any {
	r, _ := cel.JSONView(&celRequest{AdmissionRequest: req, Object: obj, OldObject: old, Options: opts})
	return map[string]any{cel.ObjectVarName: obj, cel.OldObjectVarName: old, cel.RequestVarName: r}
}
