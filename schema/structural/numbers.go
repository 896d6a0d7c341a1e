package structural

import (
	"fmt"
	"strconv"

	"github.com/apikit-dev/apikit/schema"
)

// schemaFormat is the format kube-apiserver keeps on a node: a string
// format it validates (on a string, untyped or int-or-string node), int32
// or int64 on an integer, float or double on a number; any other is
// dropped before validation.
func schemaFormat(s *schema.Schema) string {
	if s.Format == "" {
		return ""
	}
	typ := s.Type
	if s.IntOrString {
		typ = ""
	}
	switch typ {
	case "", "string":
		if supportedFormat(s.Format) != "" {
			return s.Format
		}
	case "integer":
		if s.Format == "int32" || s.Format == "int64" {
			return s.Format
		}
	case "number":
		if s.Format == "float" || s.Format == "double" {
			return s.Format
		}
	}
	return ""
}

// numberKind is the type and format kube-openapi checks numbers and their
// bounds against: the node's single numeric type and its numeric format.
func numberKind(s *schema.Schema, forDefault bool) (typ, format string) {
	// x-kubernetes-int-or-string makes the type "integer,string", but not
	// in the schema a CRD's defaults are checked against.
	if s.IntOrString && !forDefault {
		return "", ""
	}
	switch s.Type {
	case "integer":
		if s.Format == "int32" || s.Format == "int64" {
			return s.Type, s.Format
		}
		return s.Type, ""
	case "number":
		if s.Format == "float" || s.Format == "double" {
			return s.Type, s.Format
		}
		return s.Type, ""
	}
	return "", ""
}

// rangeError is kube-openapi's IsValueValidAgainstRange: whether a number
// (a value, or a schema's bound) fits the node's type and format, printed
// and parsed back as go-openapi does. Its error belongs to no field.
func rangeError(value any, typ, format, prefix string, path opath) error {
	var rep string
	switch t := value.(type) {
	case int64:
		rep = strconv.FormatInt(t, 10)
	case float64:
		rep = strconv.FormatFloat(t, 'f', -1, 64)
	default:
		return nil
	}
	var err error
	switch typ {
	case "integer":
		bits := 64
		if format == "int32" {
			bits = 32
		}
		_, err = strconv.ParseInt(rep, 10, bits)
	default:
		if format == "float" {
			_, err = strconv.ParseFloat(rep, 32)
		}
	}
	if err == nil {
		return nil
	}
	if format != "" {
		return fmt.Errorf("%s value must be of type %s with format %s in %s", prefix, typ, format, path)
	}
	return fmt.Errorf("%s value must be of type %s (default format) in %s", prefix, typ, path)
}

// checkNumber is kube-openapi's number validator: the value's range for
// its type and format, then multipleOf, minimum and maximum, each compared
// natively (an int64 against the bound truncated to an int64) when the
// bound fits the type, and as float64 otherwise, with the bound's range
// error reported too.
func (v *validator) checkNumber(s *schema.Schema, value any, path opath) {
	typ, format := numberKind(s, v.forDefault)
	i, isInt := value.(int64)
	if err := rangeError(value, typ, format, "Checked", path); err != nil {
		v.invalid(opath{}, "", "%s", err)
	}
	if s.MultipleOf != nil {
		m := *s.MultipleOf
		err := rangeError(m, typ, format, "MultipleOf", path)
		switch {
		case err == nil && isInt:
			if f := int64(m); f <= 0 {
				v.invalid(path, f, "factor MultipleOf declared for %s must be positive: %v", path, f)
			} else if i/f*f != i {
				v.invalid(path, i, "%s in body should be a multiple of %v", path, f)
			}
		default:
			if err != nil {
				v.invalid(opath{}, "", "%s", err)
			}
			v.floatMultipleOf(path, asFloat(value), m)
		}
	}
	if s.Minimum != nil {
		v.checkBound(path, value, *s.Minimum, s.ExclusiveMinimum, false, typ, format)
	}
	if s.Maximum != nil {
		v.checkBound(path, value, *s.Maximum, s.ExclusiveMaximum, true, typ, format)
	}
}

// checkBound checks a number against a minimum (or, with isMax, a
// maximum) as go-openapi's MinimumNativeType and MaximumNativeType do.
func (v *validator) checkBound(path opath, value any, bound float64, exclusive, isMax bool, typ, format string) {
	prefix, rel := "Minimum boundary", "greater than"
	if isMax {
		prefix, rel = "Maximum boundary", "less than"
	}
	if !exclusive {
		rel += " or equal to"
	}
	// fails reports whether d is beyond b; cmp is d's order against b.
	fails := func(cmp int) bool {
		if isMax {
			cmp = -cmp
		}
		return cmp < 0 || (exclusive && cmp == 0)
	}
	err := rangeError(bound, typ, format, prefix, path)
	if i, ok := value.(int64); ok && err == nil {
		if b := int64(bound); fails(cmpInt(i, b)) {
			v.invalid(path, i, "%s in body should be %s %v", path, rel, b)
		}
		return
	}
	if err != nil {
		v.invalid(opath{}, "", "%s", err)
	}
	if data := asFloat(value); fails(cmpFloat(data, bound)) {
		v.invalid(path, data, "%s in body should be %s %v", path, rel, bound)
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// floatMultipleOf is go-openapi's MultipleOf on float64s.
func (v *validator) floatMultipleOf(path opath, data, factor float64) {
	if factor <= 0 {
		v.invalid(path, factor, "factor MultipleOf declared for %s must be positive: %v", path, factor)
		return
	}
	mult := data / factor
	if factor < 1 {
		mult = 1 / factor * data
	}
	if !isJSONInteger(mult) {
		v.invalid(path, data, "%s in body should be a multiple of %v", path, factor)
	}
}

// asFloat returns a number as float64.
func asFloat(value any) float64 {
	switch t := value.(type) {
	case int64:
		return float64(t)
	case float64:
		return t
	}
	return 0
}
