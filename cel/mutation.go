package cel

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/apikit-dev/apikit/cel/library"
)

// Names of the types MutatingAdmissionPolicy expressions build, as
// kube-apiserver names them: Object (and Object.<field>...<field> for the
// values of its fields) for apply configurations, JSONPatch for JSON Patch
// operations.
const (
	ObjectTypeName    = "Object"
	JSONPatchTypeName = "JSONPatch"
)

var (
	// ApplyConfigurationType is what an ApplyConfiguration expression
	// evaluates to.
	ApplyConfigurationType = types.NewObjectType(ObjectTypeName)
	jsonPatchType          = types.NewObjectType(JSONPatchTypeName)
	// JSONPatchListType is what a JSONPatch expression evaluates to.
	JSONPatchListType = types.NewListType(jsonPatchType)
)

// NewMutationCompiler returns a Compiler for vars whose expressions may
// also build Object and JSONPatch values and call jsonpatch.escapeKey, as
// kube-apiserver compiles MutatingAdmissionPolicy mutations. Object types
// are not checked against the object's schema (any field, of any type):
// kube-apiserver 1.37 checks them only at run time, and so does
// ApplyConfiguration.
func NewMutationCompiler(vars ...Variable) (*Compiler, error) {
	wrap := func(p types.Provider) types.Provider { return &mutationTypes{Provider: p} }
	return newCompiler(wrap, []cel.EnvOption{library.JSONPatch()}, vars)
}

// mutationTypes declares Object... and JSONPatch over another provider.
type mutationTypes struct{ types.Provider }

func isObjectTypeName(n string) bool {
	return n == ObjectTypeName || strings.HasPrefix(n, ObjectTypeName+".")
}

var jsonPatchFields = []string{"op", "from", "path", "value"}

func (m *mutationTypes) FindStructType(name string) (*types.Type, bool) {
	switch {
	case name == JSONPatchTypeName:
		return types.NewTypeTypeWithParam(jsonPatchType), true
	case isObjectTypeName(name):
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return m.Provider.FindStructType(name)
}

func (m *mutationTypes) FindStructFieldNames(name string) ([]string, bool) {
	switch {
	case name == JSONPatchTypeName:
		return jsonPatchFields, true
	case isObjectTypeName(name):
		return nil, true
	}
	return m.Provider.FindStructFieldNames(name)
}

func (m *mutationTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	switch {
	case name == JSONPatchTypeName:
		switch field {
		case "op", "from", "path":
			return &types.FieldType{Type: types.StringType}, true
		case "value":
			return &types.FieldType{Type: types.DynType}, true
		}
		return nil, false
	case isObjectTypeName(name):
		return &types.FieldType{Type: types.DynType}, true
	}
	return m.Provider.FindStructFieldType(name, field)
}

func (m *mutationTypes) NewValue(name string, fields map[string]ref.Val) ref.Val {
	switch {
	case name == JSONPatchTypeName:
		return newJSONPatch(fields)
	case isObjectTypeName(name):
		return &objectValue{typeName: name, fields: fields}
	}
	return m.Provider.NewValue(name, fields)
}

// objectValue is an Object{...} an expression built.
type objectValue struct {
	typeName string
	fields   map[string]ref.Val
}

var (
	_ traits.Indexer     = (*objectValue)(nil)
	_ traits.FieldTester = (*objectValue)(nil)
	_ traits.Zeroer      = (*objectValue)(nil)
)

func (o *objectValue) ConvertToNative(t reflect.Type) (any, error) {
	if t == reflect.TypeFor[map[string]any]() {
		v, err := jsonValue(o, nil)
		return v, err
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", o.typeName, t)
}

func (o *objectValue) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t.TypeName() == o.typeName:
		return o
	case t == types.TypeType:
		return types.NewTypeTypeWithParam(types.NewObjectType(o.typeName))
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.typeName, t.TypeName())
}

func (o *objectValue) Equal(other ref.Val) ref.Val {
	r, ok := other.(*objectValue)
	if !ok || r.typeName != o.typeName || len(r.fields) != len(o.fields) {
		return types.False
	}
	for k, v := range o.fields {
		w, ok := r.fields[k]
		if !ok || v.Equal(w) != types.True {
			return types.False
		}
	}
	return types.True
}

func (o *objectValue) Type() ref.Type    { return types.NewObjectType(o.typeName) }
func (o *objectValue) Value() any        { return o.fields }
func (o *objectValue) IsZeroValue() bool { return len(o.fields) == 0 }

func (o *objectValue) Get(key ref.Val) ref.Val {
	if k, ok := key.(types.String); ok {
		if v, ok := o.fields[string(k)]; ok {
			return v
		}
		return types.NewErr("no such key: %s", k)
	}
	return types.MaybeNoSuchOverloadErr(key)
}

func (o *objectValue) IsSet(field ref.Val) ref.Val {
	if k, ok := field.(types.String); ok {
		_, set := o.fields[string(k)]
		return types.Bool(set)
	}
	return types.MaybeNoSuchOverloadErr(field)
}

// JSONPatchOperation is one JSONPatch{op:, path:, from:, value:} an
// expression built.
type JSONPatchOperation struct {
	Op, Path, From string
	// Val is the value, nil when the expression set none.
	Val ref.Val
}

var (
	_ traits.Indexer     = (*JSONPatchOperation)(nil)
	_ traits.FieldTester = (*JSONPatchOperation)(nil)
)

func newJSONPatch(fields map[string]ref.Val) ref.Val {
	p := &JSONPatchOperation{}
	for name, v := range fields {
		var to *string
		switch name {
		case "op":
			to = &p.Op
		case "path":
			to = &p.Path
		case "from":
			to = &p.From
		case "value":
			p.Val = v
			continue
		default:
			return types.NewErr("unexpected JSONPatchType field: %s", name)
		}
		s, ok := v.Value().(string)
		if !ok {
			return types.NewErr("unexpected type %T for JSONPatchType '%s' field", v.Value(), name)
		}
		*to = s
	}
	return p
}

func (p *JSONPatchOperation) ConvertToNative(t reflect.Type) (any, error) {
	if t == reflect.TypeOf(p) {
		return p, nil
	}
	return nil, fmt.Errorf("cannot convert to native type: %v", t)
}

func (p *JSONPatchOperation) ConvertToType(t ref.Type) ref.Val {
	switch {
	case t.TypeName() == JSONPatchTypeName:
		return p
	case t == types.TypeType:
		return types.NewTypeTypeWithParam(jsonPatchType)
	}
	return types.NewErr("unsupported type: %s", t.TypeName())
}

func (p *JSONPatchOperation) Equal(other ref.Val) ref.Val {
	o, ok := other.(*JSONPatchOperation)
	if !ok || p.Op != o.Op || p.Path != o.Path || p.From != o.From || (p.Val == nil) != (o.Val == nil) {
		return types.False
	}
	if p.Val == nil {
		return types.True
	}
	return p.Val.Equal(o.Val)
}

func (p *JSONPatchOperation) Type() ref.Type { return jsonPatchType }
func (p *JSONPatchOperation) Value() any     { return p }

func (p *JSONPatchOperation) Get(key ref.Val) ref.Val {
	if k, ok := key.(types.String); ok {
		switch k {
		case "op":
			return types.String(p.Op)
		case "path":
			return types.String(p.Path)
		case "from":
			return types.String(p.From)
		case "value":
			if p.Val != nil {
				return p.Val
			}
			return types.NullValue
		}
	}
	return types.NewErr("unsupported indexer: %s", key)
}

func (p *JSONPatchOperation) IsSet(field ref.Val) ref.Val {
	if k, ok := field.(types.String); ok {
		switch k {
		case "op":
			return types.Bool(p.Op != "")
		case "path":
			return types.Bool(p.Path != "")
		case "from":
			return types.Bool(p.From != "")
		case "value":
			return types.Bool(p.Val != nil)
		}
	}
	return types.NewErr("unsupported field: %s", field)
}

// ApplyConfiguration returns the JSON object an ApplyConfiguration
// expression's result stands for. Every Object inside it must be named
// after its place (Object.spec under spec, Object.spec.template under
// spec.template), as kube-apiserver checks.
func ApplyConfiguration(v ref.Val) (map[string]any, error) {
	o, ok := v.(*objectValue)
	if !ok || o.typeName != ObjectTypeName {
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", v.Type().TypeName())
	}
	out, err := jsonValue(o, []string{ObjectTypeName})
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// JSONPatch returns the operations a JSONPatch expression's result
// lists.
func JSONPatch(v ref.Val) ([]*JSONPatchOperation, error) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, errors.New("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	var out []*JSONPatchOperation
	for it := l.Iterator(); it.HasNext() == types.True; {
		p, ok := it.Next().(*JSONPatchOperation)
		if !ok {
			return nil, errors.New("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch")
		}
		out = append(out, p)
	}
	return out, nil
}

// JSONValue converts a value an expression evaluated to into a JSON value
// (map[string]any, []any, string, bool, nil, int64, float64), as a JSON
// Patch value is written. An Object inside it must be named after its
// place below the outermost Object.
func JSONValue(v ref.Val) (any, error) { return jsonValue(v, nil) }

// jsonValue converts v; path is the type name an Object must have there
// (nil: any, which then roots the names below it).
func jsonValue(v ref.Val, path []string) (any, error) {
	switch x := v.(type) {
	case *objectValue:
		if path == nil {
			path = []string{x.typeName}
		} else if want := strings.Join(path, "."); x.typeName != want {
			return nil, fmt.Errorf("type mismatch: unexpected type name %q, expected %q, which matches field name path from root Object type", x.typeName, want)
		}
		out := make(map[string]any, len(x.fields))
		for k, f := range x.fields {
			c, err := jsonValue(f, append(path[:len(path):len(path)], k))
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case *JSONPatchOperation:
		return nil, errors.New("a JSONPatch cannot be a value")
	case *types.Err:
		return nil, x
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		if x > math.MaxInt64 {
			return float64(x), nil
		}
		return int64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(x), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return x.Duration.String(), nil
	}
	// Values read from object, oldObject or params are JSON already.
	switch raw := v.Value().(type) {
	case map[string]any, []any:
		return raw, nil
	}
	if l, ok := v.(traits.Lister); ok {
		out := []any{}
		for it := l.Iterator(); it.HasNext() == types.True; {
			c, err := jsonValue(it.Next(), path)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is of type %s, not string", k, k.Type().TypeName())
			}
			c, err := jsonValue(m.Get(k), path)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = c
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value of type %s cannot be written as JSON", v.Type().TypeName())
}
