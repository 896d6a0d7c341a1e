package library

import (
	"fmt"
	"net/url"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// URLType is the CEL type of a parsed URL.
var URLType = cel.ObjectType("kubernetes.URL")

// URL is a parsed URL as a CEL value.
type URL struct{ *url.URL }

// ConvertToNative implements ref.Val.
func (u URL) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(u.URL).AssignableTo(t) {
		return u.URL, nil
	}
	if reflect.TypeOf("").AssignableTo(t) {
		return u.URL.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'URL' to '%v'", t)
}

// ConvertToType implements ref.Val.
func (u URL) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case URLType:
		return u
	case types.TypeType:
		return URLType
	case types.StringType:
		return types.String(u.URL.String())
	}
	return types.NewErr("type conversion error from '%s' to '%s'", URLType, t)
}

// Equal implements ref.Val.
func (u URL) Equal(other ref.Val) ref.Val {
	o, ok := other.(URL)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(*u.URL == *o.URL)
}

// Type implements ref.Val.
func (u URL) Type() ref.Type { return URLType }

// Value implements ref.Val.
func (u URL) Value() any { return u.URL }

// URLs returns the URL library: url(), isURL() and the getScheme,
// getHost, getHostname, getPort, getEscapedPath and getQuery accessors.
func URLs() cel.EnvOption { return cel.Lib(urlsLib{}) }

type urlsLib struct{}

func (urlsLib) LibraryName() string { return "k8s.urls" }

func (urlsLib) CompileOptions() []cel.EnvOption {
	get := func(name, id string, result *cel.Type, f func(*url.URL) ref.Val) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{URLType}, result,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				u, ok := v.(URL)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return f(u.URL)
			})))
	}
	return []cel.EnvOption{
		cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, URLType, cel.UnaryBinding(stringToURL))),
		cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(isURL))),
		get("getScheme", "url_get_scheme", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Scheme) }),
		get("getHost", "url_get_host", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Host) }),
		get("getHostname", "url_get_hostname", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Hostname()) }),
		get("getPort", "url_get_port", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.Port()) }),
		get("getEscapedPath", "url_get_escaped_path", cel.StringType, func(u *url.URL) ref.Val { return types.String(u.EscapedPath()) }),
		get("getQuery", "url_get_query", cel.MapType(cel.StringType, cel.ListType(cel.StringType)), func(u *url.URL) ref.Val {
			return types.DefaultTypeAdapter.NativeToValue(map[string][]string(u.Query()))
		}),
	}
}

func (urlsLib) ProgramOptions() []cel.ProgramOption { return nil }

func stringToURL(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	// kube parses with ParseRequestURI: an absolute URI or an absolute
	// path, no fragment.
	u, err := url.ParseRequestURI(s)
	if err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	return URL{u}
}

func isURL(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	_, err := url.ParseRequestURI(s)
	return types.Bool(err == nil)
}
