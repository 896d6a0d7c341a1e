package structural

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// Validate checks value against the OpenAPI v3 value validations of s, then
// the apiVersion, kind and metadata of the embedded resources within it
// (ValidateEmbeddedResource), then the uniqueness of x-kubernetes-list-type
// set and map lists, in the order and with the messages kube-apiserver's
// custom resource strategy reports them. value follows DecodeJSON's
// convention; a nil s accepts anything.
//
// Error paths and messages are kube-openapi's as apiextensions-apiserver
// turns them into field errors: "spec.replicas: Invalid value: 11:
// spec.replicas in body should be less than or equal to 10", "spec.name:
// Required value". Errors that belong to no field (anyOf, oneOf, allOf,
// not) carry the field "<nil>", as kube-apiserver's do. kube-openapi visits
// sibling properties in Go map order; Validate visits them in the schema's
// order, so several errors come in a stable order.
func Validate(s *schema.Schema, value any) meta.FieldErrors {
	if s == nil {
		return nil
	}
	errs := ValidateValues(s, value, nil)
	errs = append(errs, ValidateEmbeddedResource(s, value)...)
	errs = append(errs, ValidateListTypes(s, value)...)
	return errs
}

// ValidateValues checks value against the OpenAPI v3 value validations of
// s only: the first part of Validate. With a base path, the errors' fields
// sit under it while their messages name the path from value, as
// kube-apiserver validates a write to a custom resource's /status against
// the status schema alone: "status.replicas: Invalid value: "string":
// replicas in body must be of type integer". A nil s accepts anything.
func ValidateValues(s *schema.Schema, value any, base *meta.Path) meta.FieldErrors {
	if s == nil {
		return nil
	}
	v := &validator{ps: &pathStack{}, base: base}
	v.node(s, value, opath{ps: v.ps}, prior{})
	return v.errs
}

// validator collects the errors of one Validate call.
type validator struct {
	errs meta.FieldErrors
	// checks counts the validations that ran, as kube-openapi's
	// MatchCount, to pick the alternative of anyOf and oneOf whose errors
	// to report.
	checks int
	// base is the field the value validated sits at, nil for a whole
	// custom resource (a CRD's default sits at its schema's path).
	base *meta.Path
	// forDefault validates a CRD's default, against the schema as
	// kube-apiserver converts it for that: x-kubernetes-int-or-string
	// gives no type there.
	forDefault bool
	// ps is the path being validated, shared with the validators of
	// subschemas; its strings are made only for errors.
	ps *pathStack
	// keys are the kube-openapi messages of errs, seen the set of them.
	keys []string
	seen map[string]bool
}

// fieldPath turns a kube-openapi path ("spec.items[0]", or "" at the
// root) into the field path apiextensions-apiserver reports it under.
func (v *validator) fieldPath(at opath) *meta.Path {
	path := strings.TrimPrefix(at.String(), ".")
	switch {
	case v.base != nil && path == "":
		return v.base
	case v.base != nil:
		return v.base.Child(path)
	case path == "":
		return rootPath
	}
	return meta.NewPath(path)
}

// rootPath is the field of errors about no field: kube-apiserver reports
// them under a nil *field.Path, which prints as "<nil>".
var rootPath = meta.NewPath("<nil>")

// add records an error unless one with the same kube-openapi message (key)
// was: kube-openapi reports each message once per validation.
func (v *validator) add(key string, e *meta.FieldError) {
	if v.seen == nil {
		v.seen = map[string]bool{}
	}
	if v.seen[key] {
		return
	}
	v.seen[key] = true
	v.errs = append(v.errs, e)
	v.keys = append(v.keys, key)
}

// merge adds the errors of a subschema's validation.
func (v *validator) merge(w *validator) {
	for i, e := range w.errs {
		v.add(w.keys[i], e)
	}
}

func (v *validator) invalid(path opath, value any, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	v.add(msg, meta.Invalid(v.fieldPath(path), value, msg))
}

// node validates value against s at path, in kube-openapi's order: type,
// allOf/anyOf/oneOf/not, string, format, number, list, enum, object. With
// an old value correlated to it (an update), the node's errors and those of
// the values below it are dropped when the node did not change, as
// kube-apiserver's ratcheting validator turns them into warnings it does
// not send.
func (v *validator) node(s *schema.Schema, value any, path opath, old prior) {
	from := len(v.errs)
	v.check(s, value, path, old)
	if old.ok && len(v.errs) > from && Unchanged(s, old.value, value) {
		v.drop(from)
	}
}

// check is node without the ratcheting.
func (v *validator) check(s *schema.Schema, value any, path opath, old prior) {
	v.checks++
	if value == nil {
		v.checkType(s, nil, path)
		v.checkEnum(s, nil, path)
		return
	}
	v.checkType(s, value, path)
	v.checkCombinators(s, value, path)
	switch t := value.(type) {
	case string:
		v.checkString(s, t, path)
		v.checkFormat(s, t, path)
	case int64, float64:
		v.checkNumber(s, value, path)
	case []any:
		v.checkList(s, t, path, old)
	}
	v.checkEnum(s, value, path)
	if m, ok := value.(map[string]any); ok {
		v.checkObject(s, m, path, old)
	}
}

// format is the node's format as the validation sees it: kept only where
// kube validates it, except for a CRD's defaults, which kube-apiserver
// validates against the schema as written.
func (v *validator) format(s *schema.Schema) string {
	if v.forDefault {
		return s.Format
	}
	return schemaFormat(s)
}

// types is the node's OpenAPI type list: x-kubernetes-int-or-string is
// "integer,string", as apiextensions-apiserver converts it.
func types(s *schema.Schema) []string {
	if s.IntOrString {
		return []string{"integer", "string"}
	}
	if s.Type == "" {
		return nil
	}
	return []string{s.Type}
}

// jsonType is the OpenAPI type and format kube-openapi infers from a
// value; a float64 is "number" with format "float64".
func jsonType(value any) (typ, format string) {
	switch value.(type) {
	case bool:
		return "boolean", ""
	case string:
		return "string", ""
	case int64:
		return "integer", "int64"
	case float64:
		return "number", "float64"
	case []any:
		return "array", ""
	case map[string]any:
		return "object", ""
	}
	return "", ""
}

func (v *validator) checkType(s *schema.Schema, value any, path opath) {
	ts := types(s)
	if v.forDefault && s.IntOrString {
		ts = types(&schema.Schema{Type: s.Type})
	}
	if len(ts) == 0 && v.format(s) == "" {
		return
	}
	name := strings.Join(ts, ",")
	if value == nil {
		if len(ts) > 0 && !s.Nullable {
			v.typeError(path, name, "null")
		}
		return
	}
	typ, valueFormat := jsonType(value)
	format := v.format(s)
	has := func(t string) bool {
		for _, x := range ts {
			if x == t {
				return true
			}
		}
		return false
	}
	f, isFloat := value.(float64)
	floatInt := isFloat && isJSONInteger(f) && has("integer")
	intFloat := typ == "integer" && has("number")
	isText := typ == "string" || typ == "array"
	if !isText && format != "" && !(has(typ) || valueFormat == format || floatInt || intFloat) {
		v.typeError(path, format, valueFormat)
		return
	}
	if !(has("number") || has("integer")) && format != "" && isText {
		return
	}
	if !(has(typ) || floatInt || intFloat) {
		v.typeError(path, name, typ)
	}
}

func (v *validator) typeError(path opath, want, got string) {
	msg := fmt.Sprintf("%s in body must be of type %s: %q", path, want, got)
	v.add(msg, meta.TypeInvalid(v.fieldPath(path), got, msg))
}

// isJSONInteger is go-openapi's swag.IsFloat64AJSONInteger: f is within
// the range JSON integers are exact in and integral up to a relative
// error of 1e-9.
func isJSONInteger(f float64) bool {
	const maxJSON = 1<<53 - 1
	if math.IsNaN(f) || math.IsInf(f, 0) || f < -maxJSON || f > maxJSON {
		return false
	}
	r := math.Round(f)
	if f == r {
		return true
	}
	if r == 0 {
		return false
	}
	return math.Abs(f-r) < 1e-9*math.Abs(r)
}

// checkCombinators validates allOf, anyOf, oneOf and not, whose
// subschemas validate the same value at the same path.
func (v *validator) checkCombinators(s *schema.Schema, value any, path opath) {
	sub := func(n *schema.Schema) *validator {
		// kube-openapi validates the subschemas without the
		// ratcheting validator's correlation: the values below them
		// ratchet only with the node itself.
		w := &validator{base: v.base, ps: v.ps, forDefault: v.forDefault}
		w.node(n, value, path, prior{})
		return w
	}
	if len(s.AnyOf) > 0 {
		var best *validator
		ok := false
		for _, n := range s.AnyOf {
			w := sub(n)
			if len(w.errs) == 0 {
				ok = true
				break
			}
			if best == nil || w.checks > best.checks {
				best = w
			}
		}
		if !ok {
			v.invalid(opath{}, "", "%q must validate at least one schema (anyOf)", path)
			v.merge(best)
		}
	}
	if len(s.OneOf) > 0 {
		var best *validator
		valid := 0
		for _, n := range s.OneOf {
			w := sub(n)
			if len(w.errs) == 0 {
				valid++
				best = nil
				continue
			}
			if valid == 0 && (best == nil || w.checks > best.checks) {
				best = w
			}
		}
		if valid != 1 {
			more := "Found none valid"
			if valid > 1 {
				more = fmt.Sprintf("Found %d valid alternatives", valid)
			}
			v.invalid(opath{}, "", "%q must validate one and only one schema (oneOf). %s", path, more)
			if best != nil {
				v.merge(best)
			}
		}
	}
	if len(s.AllOf) > 0 {
		valid := 0
		for _, n := range s.AllOf {
			w := sub(n)
			if len(w.errs) == 0 {
				valid++
			}
			v.merge(w)
		}
		if valid != len(s.AllOf) {
			more := ""
			if valid == 0 {
				more = ". None validated"
			}
			v.invalid(opath{}, "", "%q must validate all the schemas (allOf)%s", path, more)
		}
	}
	if s.Not != nil && len(sub(s.Not).errs) == 0 {
		v.invalid(opath{}, "", "%q must not validate the schema (not)", path)
	}
}

// checkString reports the first of maxLength, minLength and pattern that
// fails, as kube-openapi stops at it. Lengths count characters.
func (v *validator) checkString(s *schema.Schema, str string, path opath) {
	n := int64(-1)
	length := func() int64 {
		if n < 0 {
			n = int64(utf8.RuneCountInString(str))
		}
		return n
	}
	if s.MaxLength != nil && length() > *s.MaxLength {
		v.add(fmt.Sprintf("%s in body should be at most %d chars long", path, *s.MaxLength), meta.TooLong(v.fieldPath(path), str, int(*s.MaxLength)))
		return
	}
	if s.MinLength != nil && length() < *s.MinLength {
		v.invalid(path, str, "%s in body should be at least %d chars long", path, *s.MinLength)
		return
	}
	if s.Pattern != "" {
		re, err := compilePattern(s.Pattern)
		if err != nil {
			v.invalid(path, str, "%s in body should match '%s, but pattern is invalid: %s'", path, s.Pattern, err)
			return
		}
		if !re.MatchString(str) {
			v.invalid(path, str, "%s in body should match '%s'", path, s.Pattern)
		}
	}
}

// patterns caches compiled patterns: a CRD's schema is validated against
// every write, and compiling dominates matching.
var patterns struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

// maxCachedPatterns bounds the cache against a stream of distinct CRDs.
const maxCachedPatterns = 4096

func compilePattern(p string) (*regexp.Regexp, error) {
	patterns.Lock()
	re, ok := patterns.m[p]
	patterns.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patterns.Lock()
	if patterns.m == nil {
		patterns.m = map[string]*regexp.Regexp{}
	}
	if len(patterns.m) < maxCachedPatterns {
		patterns.m[p] = re
	}
	patterns.Unlock()
	return re, nil
}

func (v *validator) checkFormat(s *schema.Schema, str string, path opath) {
	format := supportedFormat(v.format(s))
	if format == "" {
		return
	}
	if !formatValid(format, str) {
		msg := fmt.Sprintf("%s in body must be of type %s: %q", path, s.Format, str)
		v.add(msg, meta.TypeInvalid(v.fieldPath(path), str, msg))
	}
}

// checkList validates the items, then minItems, maxItems and uniqueItems.
func (v *validator) checkList(s *schema.Schema, list []any, path opath, old prior) {
	if s.Items != nil {
		items := correlateItems(s, old)
		for i, item := range list {
			v.node(s.Items, item, path.push(step{kind: indexStep, index: i}), items.of(item))
		}
	}
	size := int64(len(list))
	if s.MinItems != nil && size < *s.MinItems {
		v.invalid(path, size, "%s in body should have at least %d items", path, *s.MinItems)
	}
	if s.MaxItems != nil && size > *s.MaxItems {
		v.add(fmt.Sprintf("%s in body should have at most %d items", path, *s.MaxItems), meta.TooMany(v.fieldPath(path), int(size), int(*s.MaxItems)))
	}
	if s.UniqueItems && hasDuplicates(list) {
		v.invalid(path, "", "%s in body shouldn't contain duplicates", path)
	}
}

func hasDuplicates(list []any) bool {
	seen := make(map[string]bool, len(list))
	for _, item := range list {
		b, err := json.Marshal(item)
		if err != nil {
			continue
		}
		k := string(b)
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// checkEnum compares value with each enum value converted to that value's
// type, as kube-openapi does: 3.5 matches an enum value of 3.
func (v *validator) checkEnum(s *schema.Schema, value any, path opath) {
	if len(s.Enum) == 0 {
		return
	}
	for _, e := range s.Enum {
		if enumEqual(normalize(e), value) {
			return
		}
	}
	allowed := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		if str, ok := e.(string); ok {
			allowed = append(allowed, str)
			continue
		}
		b, _ := json.Marshal(normalize(e))
		allowed = append(allowed, string(b))
	}
	values := make([]any, len(s.Enum))
	for i, e := range s.Enum {
		values[i] = normalize(e)
	}
	v.add(fmt.Sprintf("%s in body should be one of %v", path, values), meta.NotSupported(v.fieldPath(path), value, allowed))
}

func enumEqual(e, value any) bool {
	switch et := e.(type) {
	case int64:
		switch vt := value.(type) {
		case int64:
			return vt == et
		case float64:
			return !math.IsNaN(vt) && vt >= math.MinInt64 && vt < math.MaxInt64 && int64(vt) == et
		}
		return false
	case float64:
		switch vt := value.(type) {
		case int64:
			return float64(vt) == et
		case float64:
			return vt == et
		}
		return false
	case string:
		// reflect converts an integer to a string as a rune, and
		// kube-openapi compares through that conversion: 97 is "a".
		if i, ok := value.(int64); ok {
			r := "\uFFFD"
			if int64(rune(i)) == i {
				r = string(rune(i))
			}
			return r == et
		}
		return value == e
	case nil:
		return false
	}
	return deepEqual(e, value)
}

// checkObject reports min/maxProperties, then validates additional
// properties, then properties, then reports missing required properties.
func (v *validator) checkObject(s *schema.Schema, m map[string]any, path opath, old prior) {
	n := int64(len(m))
	if s.MinProperties != nil && n < *s.MinProperties {
		v.invalid(path, n, "%s in body should have at least %d properties", path, *s.MinProperties)
	}
	if s.MaxProperties != nil && n > *s.MaxProperties {
		v.add(fmt.Sprintf("%s in body should have at most %d properties", path, *s.MaxProperties), meta.TooMany(v.fieldPath(path), int(n), int(*s.MaxProperties)))
	}
	if allowed := s.AdditionalPropertiesAllowed; s.AdditionalProperties == nil && allowed != nil && !*allowed {
		for _, k := range sortedKeys(m) {
			if _, ok := s.Property(k); !ok {
				msg := fmt.Sprintf("%s.%s in body is a forbidden property", path, k)
				v.add(msg, meta.Invalid(v.fieldPath(path), k, msg))
			}
		}
	}
	if s.AdditionalProperties != nil {
		for _, k := range sortedKeys(m) {
			if _, ok := s.Property(k); !ok {
				v.node(s.AdditionalProperties, m[k], path.push(step{kind: keyStep, name: k}), old.field(path, k))
			}
		}
	}
	for _, p := range s.Properties {
		if val, ok := m[p.Name]; ok {
			v.node(p.Schema, val, path.push(step{kind: childStep, name: p.Name}), old.field(path, p.Name))
		}
	}
	for _, r := range s.Required {
		if _, ok := m[r]; !ok {
			at := path.push(step{kind: keyStep, name: r})
			v.add(at.String()+" in body is required", meta.Required(v.fieldPath(at), ""))
		}
	}
}
