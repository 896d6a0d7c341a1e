package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Documented is a Go type that documents itself and its fields: the ""
// key describes the type, the others the fields by JSON name. It is the
// SwaggerDoc convention go-restful-openapi and Kubernetes' types share.
type Documented interface {
	SwaggerDoc() map[string]string
}

// ListDocumented is the Go type of a kind that documents the list kind
// served with it (FooList, which the server builds, with no Go type of
// its own): the "" key describes the list, "items" and "metadata" its
// fields. kube-apiserver's lists each have their own words.
type ListDocumented interface {
	ListSwaggerDoc() map[string]string
}

// Typer is a Go type whose JSON form is a scalar although its Go form is a
// struct (a timestamp, a quantity): Kubernetes' OpenAPISchemaType and
// OpenAPISchemaFormat convention.
type Typer interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

// AtomicStruct is a struct type that merges as one value wherever it is
// used, as Kubernetes' +structType=atomic marker makes one (core/v1's
// ObjectReference and LocalObjectReference): its named schema has
// MapType MapAtomic, x-kubernetes-map-type: atomic in OpenAPI, and
// server-side apply owns such a value as one field (managedFields list
// "f:involvedObject": {}, not its subfields). The method only marks the
// type.
type AtomicStruct interface {
	AtomicStruct()
}

var (
	typerType    = reflect.TypeOf((*Typer)(nil)).Elem()
	atomicType   = reflect.TypeOf((*AtomicStruct)(nil)).Elem()
	docType      = reflect.TypeOf((*Documented)(nil)).Elem()
	timeType     = reflect.TypeOf(time.Time{})
	durationType = reflect.TypeOf(time.Duration(0))
	numberType   = reflect.TypeOf(json.Number(""))
	rawType      = reflect.TypeOf(json.RawMessage(nil))
)

// Key is the key a Go type's schema is filed under: its package path and
// name.
func Key(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// AddType reflects t (and every type it reaches) into the Set and returns
// the node that stands for it: a reference for a named struct, the schema
// itself for anything else.
func (s *Set) AddType(t reflect.Type) (*Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.node(t, "")
}

// MustAddType is AddType for types known to be reflectable, such as a
// package's own.
func (s *Set) MustAddType(t reflect.Type) *Schema {
	n, err := s.AddType(t)
	if err != nil {
		panic(err)
	}
	return n
}

// node is the schema of a value of type t; path names the field for errors.
func (s *Set) node(t reflect.Type, path string) (*Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n, ok := scalar(t); ok {
		return n, nil
	}
	switch t.Kind() {
	case reflect.Interface:
		return &Schema{Unknown: true}, nil
	case reflect.Slice, reflect.Array:
		if t == rawType {
			return &Schema{Unknown: true}, nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{Type: "string", Format: "byte"}, nil
		}
		items, err := s.node(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return &Schema{Type: "array", Items: items}, nil
	case reflect.Map:
		if k := t.Key().Kind(); k != reflect.String {
			return nil, fmt.Errorf("schema: %s%s: map keys must be strings, not %s", t, at(path), t.Key())
		}
		n := &Schema{Type: "object"}
		if t.Elem().Kind() == reflect.Interface {
			// go-restful-openapi and Kubernetes publish a free-form
			// object without additionalProperties.
			n.Unknown = true
			return n, nil
		}
		v, err := s.node(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		n.AdditionalProperties = v
		return n, nil
	case reflect.Struct:
		if t.Name() == "" {
			return s.object(t, path)
		}
		key := Key(t)
		if _, ok := s.named[key]; !ok {
			if prev, ok := s.types[key]; ok && prev != t {
				return nil, fmt.Errorf("schema: %s and %s share the key %q", prev, t, key)
			}
			// File a placeholder first: types may refer to themselves.
			s.named[key] = &Schema{Type: "object"}
			s.types[key], s.keys[t] = t, key
			obj, err := s.object(t, key)
			if t.Implements(typerType) {
				obj, err = typed(t), nil
			} else if err == nil && t.Implements(atomicType) {
				obj.MapType = MapAtomic
			}
			if err != nil {
				delete(s.named, key)
				delete(s.types, key)
				delete(s.keys, t)
				return nil, err
			}
			s.named[key] = obj
			s.gen++
		}
		return &Schema{Ref: key}, nil
	}
	return nil, fmt.Errorf("schema: %s%s: a %s has no JSON schema", t, at(path), t.Kind())
}

func at(path string) string {
	if path == "" {
		return ""
	}
	return " (at " + path + ")"
}

// scalar is the schema of a type whose JSON form is a scalar, with the
// formats go-restful-openapi gives Go's kinds.
func scalar(t reflect.Type) (*Schema, bool) {
	switch t {
	case timeType:
		return &Schema{Type: "string", Format: "date-time"}, true
	case durationType:
		return &Schema{Type: "integer", Format: "int64"}, true
	case numberType:
		return &Schema{Type: "number", Format: "double"}, true
	}
	formats := map[reflect.Kind]string{
		reflect.Float32: "float", reflect.Float64: "double",
		reflect.Int: "int32", reflect.Int8: "byte", reflect.Int16: "integer", reflect.Int32: "int32", reflect.Int64: "int64",
		reflect.Uint: "integer", reflect.Uint8: "byte", reflect.Uint16: "integer", reflect.Uint32: "integer", reflect.Uint64: "integer",
	}
	switch k := t.Kind(); k {
	case reflect.Bool:
		return &Schema{Type: "boolean"}, true
	case reflect.String:
		return &Schema{Type: "string"}, true
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number", Format: formats[k]}, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: "integer", Format: formats[k]}, true
	}
	return nil, false
}

// typed is the schema of a Typer: named, as Kubernetes publishes
// io.k8s.apimachinery.pkg.apis.meta.v1.Time, but a scalar.
func typed(t reflect.Type) *Schema {
	v := reflect.New(t).Elem().Interface().(Typer)
	n := &Schema{Format: v.OpenAPISchemaFormat()}
	if types := v.OpenAPISchemaType(); len(types) == 1 {
		n.Type = types[0]
	} else {
		n.Unknown = true
	}
	if t.Implements(docType) {
		n.Description = reflect.New(t).Elem().Interface().(Documented).SwaggerDoc()[""]
	}
	return n
}

// object is the schema of struct t: its JSON fields, embedded structs
// without a JSON name inlined, as encoding/json writes them.
func (s *Set) object(t reflect.Type, path string) (*Schema, error) {
	obj := &Schema{Type: "object"}
	var docs map[string]string
	if t.Implements(docType) {
		docs = reflect.New(t).Elem().Interface().(Documented).SwaggerDoc()
	}
	if err := s.fields(obj, t, path, docs); err != nil {
		return nil, err
	}
	if d, ok := docs[""]; ok {
		obj.Description = d
	}
	return obj, nil
}

func (s *Set) fields(obj *Schema, t reflect.Type, path string, docs map[string]string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts := jsonName(f)
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !ft.Implements(typerType) && ft != timeType {
				if err := s.fields(obj, ft, path, nil); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		var (
			n   *Schema
			err error
		)
		if opts.has("string") {
			n = &Schema{Type: "string"}
		} else if n, err = s.node(f.Type, path+"."+name); err != nil {
			return err
		}
		if n, err = withTags(n, f, docs[name]); err != nil {
			return fmt.Errorf("schema: %s.%s: %w", t, f.Name, err)
		}
		obj.Properties = append(obj.Properties, Property{Name: name, Schema: n})
		if f.Tag.Get("optional") != "true" && !opts.has("omitempty") && !opts.has("omitzero") {
			obj.Required = append(obj.Required, name)
		}
	}
	return nil
}

type tagOptions []string

func (o tagOptions) has(opt string) bool {
	for _, s := range o {
		if s == opt {
			return true
		}
	}
	return false
}

func jsonName(f reflect.StructField) (string, tagOptions) {
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return "", nil
	}
	parts := strings.Split(tag, ",")
	if parts[0] == "-" && len(parts) == 1 {
		return "-", nil
	}
	return parts[0], tagOptions(parts[1:])
}

// withTags applies a field's tags to its node n: documentation and value
// constraints (go-restful-openapi's tags) and merge semantics (apikit's
// tags after Kubernetes' markers). A reference is copied, not changed, so
// the named schema stays shared.
func withTags(n *Schema, f reflect.StructField, doc string) (*Schema, error) {
	c := *n
	n = &c
	tag := f.Tag
	if d := tag.Get("description"); d != "" {
		n.Description = d
	}
	if doc != "" {
		n.Description = doc
	}
	if v := tag.Get("format"); v != "" {
		n.Format = v
	}
	if v := tag.Get("enum"); v != "" {
		var enum []any
		for _, e := range strings.Split(v, "|") {
			enum = append(enum, e)
		}
		if n.Type == "array" && n.Items != nil {
			items := *n.Items
			items.Enum = enum
			n.Items = &items
		} else {
			n.Enum = enum
		}
	}
	if v := tag.Get("default"); v != "" {
		n.Default = autoType(v)
	}
	for _, b := range []struct {
		tag string
		to  **float64
	}{{"minimum", &n.Minimum}, {"maximum", &n.Maximum}} {
		if v := tag.Get(b.tag); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s tag %q: %w", b.tag, v, err)
			}
			*b.to = &x
		}
	}
	if v := tag.Get("x-nullable"); v != "" {
		n.Nullable, _ = strconv.ParseBool(v)
	}
	return n, mergeTags(n, tag)
}

// autoType reads a default tag as go-restful-openapi does: an integer, a
// boolean, else a string.
func autoType(v string) any {
	if i, err := strconv.ParseInt(v, 10, 64); err == nil {
		return i
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	return v
}

// mergeTags reads listType, listMapKeys, mapType, patchStrategy and
// patchMergeKey, and checks they fit the node.
func mergeTags(n *Schema, tag reflect.StructTag) error {
	n.PatchStrategy, n.PatchMergeKey = tag.Get("patchStrategy"), tag.Get("patchMergeKey")
	lt, mt := ListType(tag.Get("listType")), MapType(tag.Get("mapType"))
	keys := tag.Get("listMapKeys")
	switch lt {
	case "", ListAtomic, ListSet, ListMap:
	default:
		return fmt.Errorf("listType %q is not atomic, set or map", lt)
	}
	switch mt {
	case "", MapAtomic, MapGranular:
	default:
		return fmt.Errorf("mapType %q is not atomic or granular", mt)
	}
	if (lt != "" || keys != "") && n.Type != "array" {
		return fmt.Errorf("listType and listMapKeys are for lists, not %s", describeType(n))
	}
	if mt != "" && n.Type != "object" && n.Ref == "" {
		return fmt.Errorf("mapType is for maps and structs, not %s", describeType(n))
	}
	if n.Type == "array" && lt == "" && strings.Contains(n.PatchStrategy, "merge") {
		// As Kubernetes' schema conversion reads a list that has only
		// strategic-merge-patch tags.
		lt, n.ImpliedListType = ListSet, true
		if n.PatchMergeKey != "" {
			lt, keys = ListMap, n.PatchMergeKey
		}
	}
	if keys != "" && lt != ListMap {
		return fmt.Errorf("listMapKeys needs listType \"map\"")
	}
	if lt == ListMap && keys == "" {
		return fmt.Errorf("listType \"map\" needs listMapKeys")
	}
	n.ListType, n.MapType = lt, mt
	if keys != "" {
		n.ListMapKeys = strings.Split(keys, ",")
	}
	return nil
}

func describeType(n *Schema) string {
	switch {
	case n.Ref != "":
		return "a struct"
	case n.Unknown:
		return "any value"
	case n.Type == "":
		return "an untyped value"
	}
	if strings.IndexByte("aeiou", n.Type[0]) >= 0 {
		return "an " + n.Type
	}
	return "a " + n.Type
}
