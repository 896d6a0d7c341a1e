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
// compiled once.
type celConditions struct {
	compiler *cel.Compiler
	mu       sync.Mutex
	compiled map[string]*cel.Expression
}

// NewCELMatchConditions returns the matchConditions evaluator of package
// cel.
func NewCELMatchConditions() (MatchConditions, error) {
	c, err := registration.MatchConditionCompiler()
	if err != nil {
		return nil, err
	}
	return &celConditions{compiler: c, compiled: map[string]*cel.Expression{}}, nil
}

func (c *celConditions) program(expr string) (*cel.Expression, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.compiled[expr]; ok {
		return p, nil
	}
	p, err := c.compiler.Compile(expr, types.BoolType)
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

// requestVars are object, oldObject and request as CEL sees them: JSON
// decoded as schema/structural decodes it.
func requestVars(req *AdmissionRequest) (map[string]any, error) {
	decode := func(raw []byte) (any, error) {
		if len(raw) == 0 {
			return nil, nil
		}
		return structural.DecodeJSON(raw)
	}
	obj, err := decode(req.Object)
	if err != nil {
		return nil, err
	}
	old, err := decode(req.OldObject)
	if err != nil {
		return nil, err
	}
	// The request is built as the JSON values it encodes to, its objects
	// decoded once above and shared by request.object and object: a JSON
	// round trip of the whole request decoded the object twice and was
	// most of a policy's cost on a create.
	rm, err := requestMap(req)
	if err != nil {
		return nil, err
	}
	if obj != nil {
		rm["object"] = obj
	}
	if old != nil {
		rm["oldObject"] = old
	}
	return map[string]any{cel.ObjectVarName: obj, cel.OldObjectVarName: old, cel.RequestVarName: rm}, nil
}

// requestMap is req without object and oldObject as structural.DecodeJSON
// gives its JSON: the fields its tags encode, empty ones left out as they
// say.
func requestMap(req *AdmissionRequest) (map[string]any, error) {
	gvk := func(k GroupVersionKind) map[string]any {
		return map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind}
	}
	gvr := func(r GroupVersionResource) map[string]any {
		return map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource}
	}
	m := map[string]any{"uid": req.UID, "kind": gvk(req.Kind), "resource": gvr(req.Resource), "operation": req.Operation}
	set := func(key, v string) {
		if v != "" {
			m[key] = v
		}
	}
	set("subResource", req.SubResource)
	set("requestSubResource", req.RequestSubResource)
	set("name", req.Name)
	set("namespace", req.Namespace)
	if req.RequestKind != nil {
		m["requestKind"] = gvk(*req.RequestKind)
	}
	if req.RequestResource != nil {
		m["requestResource"] = gvr(*req.RequestResource)
	}
	if req.DryRun != nil {
		m["dryRun"] = *req.DryRun
	}
	u := req.UserInfo
	user := map[string]any{}
	if u.Username != "" {
		user["username"] = u.Username
	}
	if u.UID != "" {
		user["uid"] = u.UID
	}
	strs := func(ss []string) []any {
		if ss == nil {
			return nil
		}
		out := make([]any, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	if len(u.Groups) > 0 {
		user["groups"] = strs(u.Groups)
	}
	if len(u.Extra) > 0 {
		extra := make(map[string]any, len(u.Extra))
		for k, v := range u.Extra {
			if v == nil {
				extra[k] = nil
			} else {
				extra[k] = strs(v)
			}
		}
		user["extra"] = extra
	}
	m["userInfo"] = user
	if len(req.Options) > 0 {
		o, err := structural.DecodeJSON(req.Options)
		if err != nil {
			return nil, fmt.Errorf("decoding the options: %w", err)
		}
		m["options"] = o
	}
	return m, nil
}
