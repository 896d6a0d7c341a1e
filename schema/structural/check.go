package structural

import (
	"fmt"
	"regexp"
	"sort"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// CheckStructural checks, when a CRD is created or updated, its
// openAPIV3Schema (raw, as decoded JSON, found at path, such as
// "spec.versions[0].schema.openAPIV3Schema") as apiextensions-apiserver
// does, with its messages and in its order:
//
//   - nullable is not true at the root;
//   - the structural rules, sorted by message: every specified node has a
//     type (or x-kubernetes-int-or-string, or
//     x-kubernetes-preserve-unknown-fields), an object at the root; arrays
//     have items; allOf, anyOf, oneOf and not hold value validations only
//     (no type, default, description, nullable or x-kubernetes-*), except
//     x-kubernetes-int-or-string's anyOf [integer, string], and the root's
//     name no property or items the schema lacks; embedded resources are
//     objects with properties or preserving unknown fields, without
//     additionalProperties; root metadata specifies only name and
//     generateName; apiVersion and kind are strings; patterns compile;
//   - when those hold, the defaults: pruned (no unknown fields) and valid
//     against their schema, embedded resources and list types included;
//   - the OpenAPI rules: no $ref, id, definitions, dependencies,
//     patternProperties, additionalItems, uniqueItems or type null;
//     additionalProperties not beside properties; no default in the root's
//     apiVersion, kind and metadata; x-kubernetes-map-type, -list-type and
//     -list-map-keys fitting their node and items, map keys required or
//     defaulted; x-kubernetes-validations entries with a rule and sane
//     messages (compiling the rules is package cel's).
//
// A schema using what kube-apiserver cannot read as structural at all
// ($ref, an items list, ...) gets the OpenAPI rules' errors only. A schema
// that passes reads with schema.FromOpenAPIV3.
func CheckStructural(raw map[string]any, path string) meta.FieldErrors {
	p := meta.NewPath(path)
	var errs meta.FieldErrors
	if flag(raw, "nullable") {
		errs = append(errs, meta.Forbidden(p.Child("nullable"), "nullable cannot be true at the root"))
	}
	why := notStructural(raw)
	if why == "" {
		structural := checkInvariants(raw, rootLevel, p)
		structural = append(structural, checkCompleteness(raw, p)...)
		sortErrors(structural)
		errs = append(errs, structural...)
		if len(structural) == 0 {
			errs = append(errs, defaultErrors(raw, p)...)
		}
	}
	errs = append(errs, checkOpenAPI(raw, p, openAPIContext{}, true)...)
	if why != "" && len(errs) == 0 {
		errs = append(errs, meta.Invalid(p, "", why))
	}
	return errs
}

// defaultErrors checks the defaults of a structural schema. The merge
// extensions are left out: their errors are the OpenAPI rules', and kube
// checks the defaults whatever they say.
func defaultErrors(raw map[string]any, p *meta.Path) meta.FieldErrors {
	data, err := jsonMarshal(withoutMergeExtensions(raw))
	if err != nil {
		return meta.FieldErrors{meta.Invalid(p, "", err.Error())}
	}
	s, err := schema.FromOpenAPIV3(data)
	if err != nil {
		// The OpenAPI rules report what FromOpenAPIV3 refuses.
		return nil
	}
	// The resource's root is an embedded resource to its own default.
	root := *s
	root.EmbeddedResource = true
	return checkDefaults(&root, &root, p, false)
}

func sortErrors(errs meta.FieldErrors) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
}

// level is where a node sits: the root, an array's items, or an object's
// field (properties and additionalProperties).
type level int

const (
	rootLevel level = iota
	itemLevel
	fieldLevel
)

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func flag(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}

func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

func sortedProps(m map[string]any) []string {
	return sortedKeys(obj(m, "properties"))
}

func checkInvariants(m map[string]any, lvl level, p *meta.Path) meta.FieldErrors {
	if m == nil {
		return nil
	}
	var errs meta.FieldErrors
	typ := str(m, "type")
	embedded := flag(m, "x-kubernetes-embedded-resource")
	intOrString := flag(m, "x-kubernetes-int-or-string")
	preserve := flag(m, "x-kubernetes-preserve-unknown-fields")
	items, hasItems := m["items"]
	if typ == "array" && !hasItems {
		errs = append(errs, meta.Required(p.Child("items"), "must be specified"))
	}
	if im, ok := items.(map[string]any); ok {
		errs = append(errs, checkInvariants(im, itemLevel, p.Child("items"))...)
	}
	props := obj(m, "properties")
	for _, k := range sortedKeys(props) {
		pm, _ := props[k].(map[string]any)
		errs = append(errs, checkInvariants(pm, fieldLevel, p.Child("properties").Key(k))...)
	}
	ap, hasAP := m["additionalProperties"]
	if hasAP {
		if lvl == rootLevel {
			errs = append(errs, meta.Forbidden(p.Child("additionalProperties"), "must not be used at the root"))
		}
		if am, ok := ap.(map[string]any); ok {
			errs = append(errs, checkInvariants(am, fieldLevel, p.Child("additionalProperties"))...)
		}
	}
	if intOrString && preserve {
		errs = append(errs, meta.Invalid(p.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	if intOrString && embedded {
		errs = append(errs, meta.Invalid(p.Child("x-kubernetes-embedded-resource"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	errs = append(errs, checkValueValidation(m, isIntOrStringAnyOf(m), isIntOrStringAllOf(m), p)...)
	switch {
	case embedded && typ != "object":
		if typ == "" {
			errs = append(errs, meta.Required(p.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
		} else {
			errs = append(errs, meta.Invalid(p.Child("type"), typ, "must be object if x-kubernetes-embedded-resource is true"))
		}
	case typ == "" && !intOrString && !preserve:
		detail := map[level]string{
			rootLevel:  "must not be empty at the root",
			itemLevel:  "must not be empty for specified array items",
			fieldLevel: "must not be empty for specified object fields",
		}[lvl]
		errs = append(errs, meta.Required(p.Child("type"), detail))
	}
	if embedded && hasAP {
		errs = append(errs, meta.Forbidden(p.Child("additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"))
	}
	if lvl == rootLevel && typ != "" && typ != "object" {
		errs = append(errs, meta.Invalid(p.Child("type"), typ, "must be object at the root"))
	}
	checkMetadata := lvl == rootLevel || embedded
	for _, f := range []struct{ name, typ string }{{"kind", "string"}, {"apiVersion", "string"}, {"metadata", "object"}} {
		if fm, ok := props[f.name].(map[string]any); ok && checkMetadata && str(fm, "type") != f.typ {
			errs = append(errs, meta.Invalid(p.Child("properties").Key(f.name).Child("type"), str(fm, "type"), "must be "+f.typ))
		}
	}
	if md, ok := props["metadata"].(map[string]any); ok && lvl == rootLevel && !metadataOnlyNames(md) {
		errs = append(errs, meta.Forbidden(p.Child("properties").Key("metadata"), "must not specify anything other than name and generateName, but metadata is implicitly specified"))
	}
	if embedded && !preserve && len(props) == 0 {
		errs = append(errs, meta.Required(p.Child("properties"), "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))
	}
	return errs
}

// metadataOnlyNames reports whether a root metadata schema states nothing
// but its type and the schemas of name and generateName (its default is
// refused elsewhere).
func metadataOnlyNames(md map[string]any) bool {
	for k := range md {
		switch k {
		case "type", "default":
		case "properties":
			for name := range obj(md, "properties") {
				if name != "name" && name != "generateName" {
					return false
				}
			}
		default:
			if !isZero(md[k]) {
				return false
			}
		}
	}
	return true
}

// isZero reports whether a schema field states nothing: false, "", null
// or an empty list or object.
func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// isIntOrStringAnyOf is the anyOf [{type: integer}, {type: string}] that
// x-kubernetes-int-or-string schemas may carry.
func isIntOrStringAnyOf(m map[string]any) bool {
	l, _ := m["anyOf"].([]any)
	if len(l) != 2 {
		return false
	}
	for i, want := range []string{"integer", "string"} {
		e, _ := l[i].(map[string]any)
		if len(e) != 1 || str(e, "type") != want {
			return false
		}
	}
	return true
}

// isIntOrStringAllOf is allOf whose first entry is that anyOf.
func isIntOrStringAllOf(m map[string]any) bool {
	l, _ := m["allOf"].([]any)
	if len(l) == 0 {
		return false
	}
	first, _ := l[0].(map[string]any)
	return first != nil && isIntOrStringAnyOf(first)
}

// checkValueValidation checks a node's allOf, anyOf, oneOf and not, and
// its pattern.
func checkValueValidation(m map[string]any, skipAnyOf, skipFirstAllOfAnyOf bool, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	junctor := func(key string, skip func(i int) bool) {
		l, _ := m[key].([]any)
		for i, e := range l {
			em, _ := e.(map[string]any)
			errs = append(errs, checkNested(em, skip(i), p.Child(key).Index(i))...)
		}
	}
	if !skipAnyOf {
		junctor("anyOf", func(int) bool { return false })
	}
	junctor("allOf", func(i int) bool { return skipFirstAllOfAnyOf && i == 0 })
	junctor("oneOf", func(int) bool { return false })
	if not := obj(m, "not"); not != nil {
		errs = append(errs, checkNested(not, false, p.Child("not"))...)
	}
	if pat := str(m, "pattern"); pat != "" {
		if _, err := regexp.Compile(pat); err != nil {
			errs = append(errs, meta.Invalid(p.Child("pattern"), pat, fmt.Sprintf("must be a valid regular expression, but isn't: %v", err)))
		}
	}
	return errs
}

// nestedForbidden are what a value validation under a junctor may not
// state, with kube-apiserver's wording for each.
var nestedForbidden = []struct {
	key, detail string
	set         func(any) bool
}{
	{"type", "must be empty to be structural", nonEmptyString},
	{"additionalProperties", "must be undefined to be structural", func(any) bool { return true }},
	{"default", "must be undefined to be structural", func(any) bool { return true }},
	{"title", "must be empty to be structural", nonEmptyString},
	{"description", "must be empty to be structural", nonEmptyString},
	{"nullable", "must be false to be structural", isTrue},
	{"x-kubernetes-preserve-unknown-fields", "must be false to be structural", isTrue},
	{"x-kubernetes-embedded-resource", "must be false to be structural", isTrue},
	{"x-kubernetes-int-or-string", "must be false to be structural", isTrue},
	{"x-kubernetes-list-map-keys", "must be empty to be structural", func(v any) bool { l, _ := v.([]any); return len(l) > 0 }},
	{"x-kubernetes-list-type", "must be undefined to be structural", func(any) bool { return true }},
	{"x-kubernetes-map-type", "must be undefined to be structural", func(any) bool { return true }},
	{"x-kubernetes-validations", "must be empty to be structural", func(v any) bool { l, _ := v.([]any); return len(l) > 0 }},
}

func nonEmptyString(v any) bool { s, _ := v.(string); return s != "" }
func isTrue(v any) bool         { b, _ := v.(bool); return b }

func checkNested(m map[string]any, skipAnyOf bool, p *meta.Path) meta.FieldErrors {
	if m == nil {
		return nil
	}
	errs := checkValueValidation(m, skipAnyOf, false, p)
	if items := obj(m, "items"); items != nil {
		errs = append(errs, checkNested(items, false, p.Child("items"))...)
	}
	props := obj(m, "properties")
	for _, k := range sortedKeys(props) {
		pm, _ := props[k].(map[string]any)
		errs = append(errs, checkNested(pm, false, p.Child("properties").Key(k))...)
	}
	for _, f := range nestedForbidden {
		if v, ok := m[f.key]; ok && v != nil && f.set(v) {
			errs = append(errs, meta.Forbidden(p.Child(f.key), f.detail))
		}
	}
	if _, ok := props["metadata"]; ok {
		errs = append(errs, meta.Forbidden(p.Child("properties").Key("metadata"), "must not be specified in a nested context"))
	}
	return errs
}

// checkCompleteness checks that every property and items the root's value
// validations name is specified by the schema itself. Like kube-apiserver,
// it starts at the root's junctors only: a junctor deeper down may name
// what its node lacks.
func checkCompleteness(m map[string]any, p *meta.Path) meta.FieldErrors {
	if m == nil {
		return nil
	}
	return checkJunctorsComplete(m, m, p, p)
}

// checkJunctorsComplete checks the junctors of v against the node s.
func checkJunctorsComplete(v, s map[string]any, sPath, vPath *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if not := obj(v, "not"); not != nil {
		errs = append(errs, checkNestedComplete(not, s, sPath, vPath.Child("not"))...)
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		l, _ := v[key].([]any)
		for i, e := range l {
			em, _ := e.(map[string]any)
			errs = append(errs, checkNestedComplete(em, s, sPath, vPath.Child(key).Index(i))...)
		}
	}
	return errs
}

func checkNestedComplete(v, s map[string]any, sPath, vPath *meta.Path) meta.FieldErrors {
	if v == nil {
		return nil
	}
	if s == nil {
		return meta.FieldErrors{meta.Required(sPath, "because it is defined in "+vPath.String())}
	}
	errs := checkJunctorsComplete(v, s, sPath, vPath)
	if vi := obj(v, "items"); vi != nil {
		errs = append(errs, checkNestedComplete(vi, obj(s, "items"), sPath.Child("items"), vPath.Child("items"))...)
	}
	sProps := obj(s, "properties")
	for _, k := range sortedProps(v) {
		vk, _ := obj(v, "properties")[k].(map[string]any)
		sk, ok := sProps[k].(map[string]any)
		if !ok {
			errs = append(errs, meta.Required(sPath.Child("properties").Key(k), "because it is defined in "+vPath.Child("properties").Key(k).String()))
			continue
		}
		errs = append(errs, checkNestedComplete(vk, sk, sPath.Child("properties").Key(k), vPath.Child("properties").Key(k))...)
	}
	return errs
}

// withoutMergeExtensions copies a schema without x-kubernetes-list-type,
// -list-map-keys and -map-type.
func withoutMergeExtensions(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			switch k {
			case "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type":
				continue
			case "default", "enum", "example":
				out[k] = e
			default:
				out[k] = withoutMergeExtensions(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = withoutMergeExtensions(e)
		}
		return out
	}
	return v
}

// checkDefaults checks every default of a structural schema but those in
// the root's apiVersion, kind and metadata, which the OpenAPI rules refuse:
// each must have no unknown fields and be valid against its node's schema
// and as embedded resources (kube-apiserver does not hold defaults to the
// list types). additionalProperties are
// not followed, as kube-apiserver does not follow them.
func checkDefaults(s, root *schema.Schema, p *meta.Path, insideMeta bool) meta.FieldErrors {
	if s == nil {
		return nil
	}
	var errs meta.FieldErrors
	if s.Default != nil {
		dp := p.Child("default")
		def := normalize(s.Default)
		if !insideMeta {
			pruned := normalize(s.Default)
			pruneFields(s, pruned, s.EmbeddedResource)
			if !deepEqual(pruned, def) {
				errs = append(errs, meta.Invalid(dp, def, "must not have unknown fields"))
			}
			// As kube-apiserver: the embedded resources' errors, or else
			// the schema's.
			if embedded := validateEmbedded(s, def, dp); len(embedded) > 0 {
				errs = append(errs, embedded...)
			} else {
				v := &validator{base: dp, ps: &pathStack{}, forDefault: true}
				v.node(s, def, opath{ps: v.ps}, prior{})
				errs = append(errs, v.errs...)
			}
		}
	}
	if s.Items != nil {
		errs = append(errs, checkDefaults(s.Items, root, p.Child("items"), insideMeta)...)
	}
	for _, prop := range s.Properties {
		inMeta := insideMeta || (s == root && (prop.Name == "metadata" || prop.Name == "kind" || prop.Name == "apiVersion"))
		errs = append(errs, checkDefaults(prop.Schema, root, p.Child("properties").Key(prop.Name), inMeta)...)
	}
	return errs
}
