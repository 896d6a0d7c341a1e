package cel

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/schema"
)

// kind is how a schema node's JSON value becomes a CEL value.
type kind int

const (
	kindDyn kind = iota
	kindObject
	kindMap
	kindList
	kindString
	kindBytes
	kindDuration
	kindDate
	kindDateTime
	kindBool
	kindInt
	kindDouble
)

// Sizes kube's estimator assumes for serialized JSON values.
const (
	minStringSize       = 2  // ""
	minBoolSize         = 4  // true
	minNumberSize       = 1  // 0
	minDurationSizeJSON = 3  // "0"
	jsonDateSize        = 12 // "YYYY-MM-DD"
	minDatetimeSizeJSON = 21
	maxDurationSizeJSON = 32
	maxDatetimeSizeJSON = 32
)

// declType is the CEL view of one schema node: its CEL type, how its
// values convert, and the bounds the cost estimator uses.
type declType struct {
	kind    kind
	celType *types.Type
	schema  *schema.Schema
	// fields are an object's visible properties, by escaped name.
	fields map[string]*declField
	// elem is a list's item or a map's value.
	elem *declType
	// maxElements bounds a string's bytes, a list's items or a map's
	// entries; minSize is the smallest the value serializes to.
	maxElements int64
	minSize     int64
}

type declField struct {
	name string
	typ  *declType
}

// declTypes builds the CEL types of a schema tree, naming object types
// under one root name, and serves them to the checker as a type provider.
type declTypes struct {
	base    types.Provider
	objects map[string]*declType
}

func zeroIfNegative(v int64) int64 { return max(v, 0) }

// resourceMeta is what rules always see at the root of a resource:
// apiVersion, kind, and metadata's name and generateName.
var resourceMeta = func() (apiVersion, kind, metadata *schema.Schema) {
	str := &schema.Schema{Type: "string"}
	return str, str, &schema.Schema{Type: "object", Properties: []schema.Property{
		{Name: "name", Schema: str}, {Name: "generateName", Schema: str},
	}}
}

// withTypeAndObjectMeta returns s with apiVersion, kind and
// metadata.name/generateName, unless it declares them already; a metadata
// declared otherwise is replaced, as kube replaces it.
func withTypeAndObjectMeta(s *schema.Schema) *schema.Schema {
	isType := func(n *schema.Schema, ok bool, t string) bool { return ok && n != nil && n.Type == t }
	k, okK := s.Property("kind")
	av, okA := s.Property("apiVersion")
	md, okM := s.Property("metadata")
	if isType(k, okK, "string") && isType(av, okA, "string") && isType(md, okM, "object") {
		n, okN := md.Property("name")
		g, okG := md.Property("generateName")
		if isType(n, okN, "string") && isType(g, okG, "string") {
			return s
		}
	}
	apiVersion, kindS, metadata := resourceMeta()
	c := *s
	c.Properties = nil
	for _, p := range s.Properties {
		switch p.Name {
		case "kind", "apiVersion", "metadata":
			continue
		}
		c.Properties = append(c.Properties, p)
	}
	c.Properties = append(c.Properties,
		schema.Property{Name: "kind", Schema: kindS},
		schema.Property{Name: "apiVersion", Schema: apiVersion},
		schema.Property{Name: "metadata", Schema: metadata})
	return &c
}

// build returns the declType of s, or nil when rules cannot see s (no
// type, or a list or map of such).
func (d *declTypes) build(s *schema.Schema, name string, resourceRoot bool) *declType {
	if s == nil {
		return nil
	}
	if s.IntOrString {
		t := &declType{kind: kindDyn, celType: types.DynType, schema: s, minSize: 1}
		if s.MaxLength != nil {
			t.maxElements = zeroIfNegative(*s.MaxLength) * 4
		} else {
			t.maxElements = MaxRequestSizeBytes - 2
		}
		return t
	}
	if resourceRoot {
		s = withTypeAndObjectMeta(s)
	}
	switch s.Type {
	case "array":
		if s.Items == nil {
			return nil
		}
		elem := d.build(s.Items, name+".@idx", s.Items.EmbeddedResource)
		if elem == nil {
			return nil
		}
		t := &declType{kind: kindList, celType: types.NewListType(elem.celType), schema: s, elem: elem, minSize: 2}
		if s.MaxItems != nil {
			t.maxElements = zeroIfNegative(*s.MaxItems)
		} else {
			t.maxElements = (MaxRequestSizeBytes - 2) / (elem.minSize + 1)
		}
		return t
	case "object":
		if ap := s.AdditionalProperties; ap != nil {
			elem := d.build(ap, name+".@elem", ap.EmbeddedResource)
			if elem == nil {
				return nil
			}
			t := &declType{kind: kindMap, celType: types.NewMapType(types.StringType, elem.celType), schema: s, elem: elem, minSize: 2}
			if s.MaxProperties != nil {
				t.maxElements = zeroIfNegative(*s.MaxProperties)
			} else {
				t.maxElements = (MaxRequestSizeBytes - 2) / (elem.minSize + 6)
			}
			return t
		}
		t := &declType{kind: kindObject, celType: types.NewObjectType(name), schema: s, fields: map[string]*declField{}, minSize: 2}
		for _, p := range s.Properties {
			ft := d.build(p.Schema, name+"."+p.Name, p.Schema != nil && p.Schema.EmbeddedResource)
			if ft == nil {
				continue
			}
			if esc, ok := Escape(p.Name); ok {
				t.fields[esc] = &declField{name: p.Name, typ: ft}
			}
			if s.IsRequired(p.Name) && p.Schema.Default == nil {
				t.minSize += int64(len(p.Name)) + ft.minSize + 4
			}
		}
		d.objects[name] = t
		return t
	case "string":
		return stringDecl(s)
	case "boolean":
		return &declType{kind: kindBool, celType: types.BoolType, schema: s, minSize: minBoolSize}
	case "number":
		return &declType{kind: kindDouble, celType: types.DoubleType, schema: s, minSize: minNumberSize}
	case "integer":
		return &declType{kind: kindInt, celType: types.IntType, schema: s, minSize: minNumberSize}
	}
	return nil
}

func stringDecl(s *schema.Schema) *declType {
	switch s.Format {
	case "byte":
		t := &declType{kind: kindBytes, celType: types.BytesType, schema: s, minSize: minStringSize, maxElements: MaxRequestSizeBytes - 2}
		if s.MaxLength != nil {
			t.maxElements = zeroIfNegative(*s.MaxLength)
		}
		return t
	case "duration":
		return &declType{kind: kindDuration, celType: types.DurationType, schema: s, minSize: minDurationSizeJSON, maxElements: maxDurationSizeJSON}
	case "date":
		return &declType{kind: kindDate, celType: types.TimestampType, schema: s, minSize: jsonDateSize, maxElements: jsonDateSize}
	case "date-time":
		return &declType{kind: kindDateTime, celType: types.TimestampType, schema: s, minSize: minDatetimeSizeJSON, maxElements: maxDatetimeSizeJSON}
	}
	t := &declType{kind: kindString, celType: types.StringType, schema: s, minSize: minStringSize}
	switch {
	case s.MaxLength != nil:
		t.maxElements = zeroIfNegative(*s.MaxLength) * 4
	case len(s.Enum) > 0:
		for _, e := range s.Enum {
			if str, ok := e.(string); ok && int64(len(str)) > t.maxElements {
				t.maxElements = int64(len(str))
			}
		}
	default:
		t.maxElements = MaxRequestSizeBytes - 2
	}
	return t
}

// EnumValue implements types.Provider.
func (d *declTypes) EnumValue(name string) ref.Val { return d.base.EnumValue(name) }

// FindIdent implements types.Provider.
func (d *declTypes) FindIdent(name string) (ref.Val, bool) { return d.base.FindIdent(name) }

// FindStructType implements types.Provider.
func (d *declTypes) FindStructType(name string) (*types.Type, bool) {
	if t, ok := d.objects[name]; ok {
		return types.NewTypeTypeWithParam(t.celType), true
	}
	return d.base.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (d *declTypes) FindStructFieldNames(name string) ([]string, bool) {
	if t, ok := d.objects[name]; ok {
		names := make([]string, 0, len(t.fields))
		for n := range t.fields {
			names = append(names, n)
		}
		return names, true
	}
	return d.base.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider.
func (d *declTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if t, ok := d.objects[name]; ok {
		f, ok := t.fields[field]
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: f.typ.celType}, true
	}
	return d.base.FindStructFieldType(name, field)
}

// NewValue implements types.Provider: schema objects cannot be built in
// an expression.
func (d *declTypes) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := d.objects[name]; ok {
		return types.NewErr("cannot create an instance of %s", name)
	}
	return d.base.NewValue(name, fields)
}

var _ types.Provider = (*declTypes)(nil)

// envOptions declares the types to the checker.
func (d *declTypes) envOptions() []cel.EnvOption {
	return []cel.EnvOption{cel.CustomTypeProvider(d)}
}
