package library

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
)

// The CEL types of the authorizer library.
var (
	AuthorizerType    = cel.ObjectType("kubernetes.authorization.Authorizer")
	PathCheckType     = cel.ObjectType("kubernetes.authorization.PathCheck")
	GroupCheckType    = cel.ObjectType("kubernetes.authorization.GroupCheck")
	ResourceCheckType = cel.ObjectType("kubernetes.authorization.ResourceCheck")
	DecisionType      = cel.ObjectType("kubernetes.authorization.Decision")
)

// Authz returns the authorizer library an admission expression reaches
// through its authorizer variable:
//
//	authorizer.group('apps').resource('deployments').namespace('ns').name('n').check('update').allowed()
//	authorizer.path('/healthz').check('get').reason()
//	authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').errored()
func Authz() cel.EnvOption { return cel.Lib(authzLib{}) }

type authzLib struct{}

func (authzLib) LibraryName() string { return "k8s.authz" }

// NewAuthorizer returns the value of the authorizer variable: checks made
// through it ask a for user, within ctx.
func NewAuthorizer(ctx context.Context, a authz.Authorizer, user *authn.User) ref.Val {
	return authorizerVal{ctx: ctx, authorizer: a, user: user}
}

// NewResourceCheck returns the value of authorizer.requestResource: a
// resource check already naming the request's group, resource,
// subresource, namespace and name (checks ask for any version, as kube's).
func NewResourceCheck(ctx context.Context, a authz.Authorizer, user *authn.User, req authz.Attributes) ref.Val {
	return resourceCheckVal{authorizerVal: authorizerVal{ctx: ctx, authorizer: a, user: user}, attrs: authz.Attributes{
		APIGroup: req.APIGroup, Resource: req.Resource,
		Subresource: req.Subresource, Namespace: req.Namespace, Name: req.Name,
	}}
}

type authorizerVal struct {
	ctx        context.Context
	authorizer authz.Authorizer
	user       *authn.User
}

type pathCheckVal struct {
	authorizerVal
	path string
}

type groupCheckVal struct {
	authorizerVal
	group string
}

type resourceCheckVal struct {
	authorizerVal
	attrs authz.Attributes
}

type decisionVal struct {
	decision authz.Decision
	reason   string
	err      error
}

// opaque gives the library's values the ref.Val methods: they are not
// comparable or convertible in CEL, as kube's are not.
type opaque struct{ t *types.Type }

func (o opaque) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", o.t, t)
}
func (o opaque) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return o.t
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.t, t)
}
func (o opaque) Equal(other ref.Val) ref.Val { return types.MaybeNoSuchOverloadErr(other) }
func (o opaque) Type() ref.Type              { return o.t }

func (a authorizerVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{AuthorizerType}.ConvertToNative(t)
}
func (a authorizerVal) ConvertToType(t ref.Type) ref.Val {
	return opaque{AuthorizerType}.ConvertToType(t)
}
func (a authorizerVal) Equal(o ref.Val) ref.Val { return opaque{AuthorizerType}.Equal(o) }
func (a authorizerVal) Type() ref.Type          { return AuthorizerType }
func (a authorizerVal) Value() any              { return a }

func (p pathCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{PathCheckType}.ConvertToNative(t)
}
func (p pathCheckVal) ConvertToType(t ref.Type) ref.Val {
	return opaque{PathCheckType}.ConvertToType(t)
}
func (p pathCheckVal) Type() ref.Type { return PathCheckType }
func (p pathCheckVal) Value() any     { return p }

func (g groupCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{GroupCheckType}.ConvertToNative(t)
}
func (g groupCheckVal) ConvertToType(t ref.Type) ref.Val {
	return opaque{GroupCheckType}.ConvertToType(t)
}
func (g groupCheckVal) Type() ref.Type { return GroupCheckType }
func (g groupCheckVal) Value() any     { return g }

func (r resourceCheckVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{ResourceCheckType}.ConvertToNative(t)
}
func (r resourceCheckVal) ConvertToType(t ref.Type) ref.Val {
	return opaque{ResourceCheckType}.ConvertToType(t)
}
func (r resourceCheckVal) Type() ref.Type { return ResourceCheckType }
func (r resourceCheckVal) Value() any     { return r }

func (d decisionVal) ConvertToNative(t reflect.Type) (any, error) {
	return opaque{DecisionType}.ConvertToNative(t)
}
func (d decisionVal) ConvertToType(t ref.Type) ref.Val { return opaque{DecisionType}.ConvertToType(t) }
func (d decisionVal) Equal(o ref.Val) ref.Val          { return opaque{DecisionType}.Equal(o) }
func (d decisionVal) Type() ref.Type                   { return DecisionType }
func (d decisionVal) Value() any                       { return d }

// check asks the authorizer, as kube's library does: any API version, the
// user the expression runs for.
func (a authorizerVal) check(attrs authz.Attributes) ref.Val {
	attrs.User = a.user
	if a.authorizer == nil {
		return decisionVal{decision: authz.DecisionNoOpinion, err: fmt.Errorf("no authorizer")}
	}
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	d, reason, err := a.authorizer.Authorize(ctx, attrs)
	return decisionVal{decision: d, reason: reason, err: err}
}

func strArg(v ref.Val) (string, ref.Val) {
	s, ok := v.Value().(string)
	if !ok {
		return "", types.MaybeNoSuchOverloadErr(v)
	}
	return s, nil
}

func (authzLib) CompileOptions() []cel.EnvOption {
	str := cel.StringType
	withResource := func(id, name string, set func(*authz.Attributes, string)) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{ResourceCheckType, str}, ResourceCheckType,
			cel.BinaryBinding(func(rv, arg ref.Val) ref.Val {
				r, ok := rv.(resourceCheckVal)
				if !ok {
					return types.MaybeNoSuchOverloadErr(rv)
				}
				s, errVal := strArg(arg)
				if errVal != nil {
					return errVal
				}
				set(&r.attrs, s)
				return r
			})))
	}
	onDecision := func(id, name string, result *cel.Type, f func(decisionVal) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{DecisionType}, result,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				d, ok := v.(decisionVal)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return f(d)
			})))
	}
	return []cel.EnvOption{
		cel.Function("path", cel.MemberOverload("authorizer_path", []*cel.Type{AuthorizerType, str}, PathCheckType,
			cel.BinaryBinding(func(av, pv ref.Val) ref.Val {
				a, ok := av.(authorizerVal)
				if !ok {
					return types.MaybeNoSuchOverloadErr(av)
				}
				p, errVal := strArg(pv)
				if errVal != nil {
					return errVal
				}
				return pathCheckVal{authorizerVal: a, path: p}
			}))),
		cel.Function("group", cel.MemberOverload("authorizer_group", []*cel.Type{AuthorizerType, str}, GroupCheckType,
			cel.BinaryBinding(func(av, gv ref.Val) ref.Val {
				a, ok := av.(authorizerVal)
				if !ok {
					return types.MaybeNoSuchOverloadErr(av)
				}
				g, errVal := strArg(gv)
				if errVal != nil {
					return errVal
				}
				return groupCheckVal{authorizerVal: a, group: g}
			}))),
		cel.Function("serviceAccount", cel.MemberOverload("authorizer_serviceaccount", []*cel.Type{AuthorizerType, str, str}, AuthorizerType,
			cel.FunctionBinding(func(args ...ref.Val) ref.Val {
				a, ok := args[0].(authorizerVal)
				if !ok {
					return types.MaybeNoSuchOverloadErr(args[0])
				}
				ns, errVal := strArg(args[1])
				if errVal != nil {
					return errVal
				}
				name, errVal := strArg(args[2])
				if errVal != nil {
					return errVal
				}
				a.user = &authn.User{
					Name:   "system:serviceaccount:" + ns + ":" + name,
					Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
				}
				return a
			}))),
		cel.Function("resource", cel.MemberOverload("groupcheck_resource", []*cel.Type{GroupCheckType, str}, ResourceCheckType,
			cel.BinaryBinding(func(gv, rv ref.Val) ref.Val {
				g, ok := gv.(groupCheckVal)
				if !ok {
					return types.MaybeNoSuchOverloadErr(gv)
				}
				r, errVal := strArg(rv)
				if errVal != nil {
					return errVal
				}
				return resourceCheckVal{authorizerVal: g.authorizerVal, attrs: authz.Attributes{APIGroup: g.group, Resource: r}}
			}))),
		withResource("resourcecheck_subresource", "subresource", func(a *authz.Attributes, s string) { a.Subresource = s }),
		withResource("resourcecheck_namespace", "namespace", func(a *authz.Attributes, s string) { a.Namespace = s }),
		withResource("resourcecheck_name", "name", func(a *authz.Attributes, s string) { a.Name = s }),
		cel.Function("check",
			cel.MemberOverload("pathcheck_check", []*cel.Type{PathCheckType, str}, DecisionType,
				cel.BinaryBinding(func(pv, vv ref.Val) ref.Val {
					p, ok := pv.(pathCheckVal)
					if !ok {
						return types.MaybeNoSuchOverloadErr(pv)
					}
					verb, errVal := strArg(vv)
					if errVal != nil {
						return errVal
					}
					return p.check(authz.Attributes{Verb: strings.ToLower(verb), Path: p.path})
				})),
			cel.MemberOverload("resourcecheck_check", []*cel.Type{ResourceCheckType, str}, DecisionType,
				cel.BinaryBinding(func(rv, vv ref.Val) ref.Val {
					r, ok := rv.(resourceCheckVal)
					if !ok {
						return types.MaybeNoSuchOverloadErr(rv)
					}
					verb, errVal := strArg(vv)
					if errVal != nil {
						return errVal
					}
					attrs := r.attrs
					// kube's checks name no version, the request's neither.
					attrs.Verb, attrs.ResourceRequest, attrs.APIVersion = verb, true, "*"
					return r.authorizerVal.check(attrs)
				}))),
		onDecision("decision_allowed", "allowed", cel.BoolType, func(d decisionVal) ref.Val {
			return types.Bool(d.decision == authz.DecisionAllow)
		}),
		onDecision("decision_reason", "reason", cel.StringType, func(d decisionVal) ref.Val { return types.String(d.reason) }),
		onDecision("decision_errored", "errored", cel.BoolType, func(d decisionVal) ref.Val { return types.Bool(d.err != nil) }),
		onDecision("decision_error", "error", cel.StringType, func(d decisionVal) ref.Val {
			if d.err == nil {
				return types.String("")
			}
			return types.String(d.err.Error())
		}),
	}
}

func (authzLib) ProgramOptions() []cel.ProgramOption { return nil }
