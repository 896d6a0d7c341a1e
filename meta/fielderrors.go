package meta

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// FieldErrorType is the machine-readable kind of a field error; its values
// are the "reason" of a StatusCause.
type FieldErrorType string

// Field error types, as k8s.io/apimachinery names them.
const (
	FieldValueNotFound  FieldErrorType = "FieldValueNotFound"
	FieldValueRequired  FieldErrorType = "FieldValueRequired"
	FieldValueDuplicate FieldErrorType = "FieldValueDuplicate"
	FieldValueInvalid   FieldErrorType = "FieldValueInvalid"
	// FieldValueTypeInvalid is a value of the wrong JSON type; it reads
	// "Invalid value" like FieldValueInvalid.
	FieldValueTypeInvalid  FieldErrorType = "FieldValueTypeInvalid"
	FieldValueNotSupported FieldErrorType = "FieldValueNotSupported"
	FieldValueForbidden    FieldErrorType = "FieldValueForbidden"
	FieldValueTooLong      FieldErrorType = "FieldValueTooLong"
	FieldValueTooMany      FieldErrorType = "FieldValueTooMany"
	FieldInternal          FieldErrorType = "InternalError"
)

// String returns the human-readable form used in messages.
func (t FieldErrorType) String() string {
	switch t {
	case FieldValueNotFound:
		return "Not found"
	case FieldValueRequired:
		return "Required value"
	case FieldValueDuplicate:
		return "Duplicate value"
	case FieldValueInvalid, FieldValueTypeInvalid:
		return "Invalid value"
	case FieldValueNotSupported:
		return "Unsupported value"
	case FieldValueForbidden:
		return "Forbidden"
	case FieldValueTooLong:
		return "Too long"
	case FieldValueTooMany:
		return "Too many"
	case FieldInternal:
		return "Internal error"
	default:
		return string(t)
	}
}

// FieldError is one validation failure at one field path.
type FieldError struct {
	Type     FieldErrorType
	Field    string
	BadValue any
	Detail   string
	// omitValue suppresses the value in the message (Required, Forbidden...).
	omitValue bool
}

// Error returns "field: body".
func (e *FieldError) Error() string { return e.Field + ": " + e.ErrorBody() }

// ErrorBody returns the message without the field path, formatted as
// k8s.io/apimachinery formats it: simple numbers and booleans as %v, strings
// quoted, anything else as JSON (so a []string reads ["a","b"]), falling
// back to String() and then %#v for values JSON cannot encode.
func (e *FieldError) ErrorBody() string {
	var s string
	switch {
	case e.omitValue, e.Type == FieldValueRequired, e.Type == FieldValueForbidden,
		e.Type == FieldValueTooLong, e.Type == FieldInternal:
		s = e.Type.String()
	default:
		switch t := e.BadValue.(type) {
		case int64, int32, float64, float32, bool:
			s = fmt.Sprintf("%s: %v", e.Type, t)
		case string:
			s = fmt.Sprintf("%s: %q", e.Type, t)
		default:
			var v string
			if b, err := json.Marshal(t); err == nil {
				v = string(b)
			} else if st, ok := t.(fmt.Stringer); ok {
				v = st.String()
			} else {
				v = fmt.Sprintf("%#v", t)
			}
			s = fmt.Sprintf("%s: %s", e.Type, v)
		}
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// OmitValue leaves the value out of the message ("Invalid value: detail"),
// as k8s.io/apimachinery's field.OmitValueType does for objects and lists.
func (e *FieldError) OmitValue() *FieldError {
	e.omitValue = true
	return e
}

// FieldErrors is a list of field errors; an empty list means valid.
type FieldErrors []*FieldError

// Error joins the errors as k8s.io/apimachinery's aggregate does: one error
// as itself, several as "[a, b]", duplicates dropped, none as "".
func (l FieldErrors) Error() string {
	if len(l) == 0 {
		return ""
	}
	seen := make(map[string]bool, len(l))
	msgs := make([]string, 0, len(l))
	for _, e := range l {
		m := e.Error()
		if seen[m] {
			continue
		}
		seen[m] = true
		msgs = append(msgs, m)
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// Path is a field path such as "spec.containers[0].name". The zero value is
// the root.
type Path struct {
	s string
}

// NewPath returns the path of a top-level field and its children.
func NewPath(name string, more ...string) *Path {
	p := &Path{s: name}
	for _, m := range more {
		p = p.Child(m)
	}
	return p
}

// Child returns the path of a named child field.
func (p *Path) Child(name string, more ...string) *Path {
	s := name
	if p != nil && p.s != "" {
		s = p.s + "." + name
	}
	c := &Path{s: s}
	for _, m := range more {
		c = c.Child(m)
	}
	return c
}

// Index returns the path of a list element.
func (p *Path) Index(i int) *Path { return &Path{s: p.String() + "[" + strconv.Itoa(i) + "]"} }

// Key returns the path of a map entry.
func (p *Path) Key(k string) *Path { return &Path{s: p.String() + "[" + k + "]"} }

// String returns the dotted form.
func (p *Path) String() string {
	if p == nil {
		return ""
	}
	return p.s
}

// Required reports a missing value.
func Required(p *Path, detail string) *FieldError {
	return &FieldError{Type: FieldValueRequired, Field: p.String(), Detail: detail, omitValue: true}
}

// Invalid reports a value that is malformed or out of range.
func Invalid(p *Path, value any, detail string) *FieldError {
	return &FieldError{Type: FieldValueInvalid, Field: p.String(), BadValue: value, Detail: detail}
}

// TypeInvalid reports a value of the wrong type, as custom resource
// validation reports a schema's type errors.
func TypeInvalid(p *Path, value any, detail string) *FieldError {
	return &FieldError{Type: FieldValueTypeInvalid, Field: p.String(), BadValue: value, Detail: detail}
}

// TooMany reports a list or map over its maximum size; actual is left out
// of the message when negative, and so is the limit.
func TooMany(p *Path, actual, maxQuantity int) *FieldError {
	detail := "has too many items"
	if maxQuantity >= 0 {
		unit := "items"
		if maxQuantity == 1 {
			unit = "item"
		}
		detail = fmt.Sprintf("must have at most %d %s", maxQuantity, unit)
	}
	e := &FieldError{Type: FieldValueTooMany, Field: p.String(), Detail: detail}
	if actual >= 0 {
		e.BadValue = int64(actual)
	} else {
		e.omitValue = true
	}
	return e
}

// NotSupported reports a value outside a fixed set.
func NotSupported(p *Path, value any, valid []string) *FieldError {
	detail := ""
	if len(valid) > 0 {
		q := make([]string, len(valid))
		for i, v := range valid {
			q[i] = strconv.Quote(v)
		}
		detail = "supported values: " + strings.Join(q, ", ")
	}
	return &FieldError{Type: FieldValueNotSupported, Field: p.String(), BadValue: value, Detail: detail}
}

// Duplicate reports a repeated value that must be unique.
func Duplicate(p *Path, value any) *FieldError {
	return &FieldError{Type: FieldValueDuplicate, Field: p.String(), BadValue: value}
}

// Forbidden reports a field that may not be set or changed.
func Forbidden(p *Path, detail string) *FieldError {
	return &FieldError{Type: FieldValueForbidden, Field: p.String(), Detail: detail, omitValue: true}
}

// TooLong reports a value over its maximum length in bytes; the value is
// not repeated in the message. A negative maxLength leaves the limit out.
func TooLong(p *Path, value any, maxLength int) *FieldError {
	detail := "value is too long"
	switch {
	case maxLength == 1:
		detail = "may not be more than 1 byte"
	case maxLength >= 0:
		detail = fmt.Sprintf("may not be more than %d bytes", maxLength)
	}
	return &FieldError{Type: FieldValueTooLong, Field: p.String(), BadValue: value, Detail: detail}
}

// InternalFieldError reports a failure of the validator itself.
func InternalFieldError(p *Path, err error) *FieldError {
	return &FieldError{Type: FieldInternal, Field: p.String(), Detail: err.Error(), omitValue: true}
}
