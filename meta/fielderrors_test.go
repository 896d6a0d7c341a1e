package meta

import (
	"errors"
	"testing"
)

type stringerOnly struct{ Ch chan int } // JSON cannot encode a channel

func (stringerOnly) String() string { return "stringer" }

func TestFieldErrorMessages(t *testing.T) {
	spec := NewPath("spec")
	s := "x"
	var nilString *string
	tests := []struct {
		name string
		err  *FieldError
		want string
	}{
		{"invalid string", Invalid(spec.Child("x"), "y", "detail"), `spec.x: Invalid value: "y": detail`},
		{"invalid quotes", Invalid(spec.Child("x"), `a"b`, ""), `spec.x: Invalid value: "a\"b"`},
		{"invalid int", Invalid(spec.Child("replicas"), 5, "must be less than 3"), `spec.replicas: Invalid value: 5: must be less than 3`},
		{"invalid int64", Invalid(NewPath("metadata", "generation"), int64(-1), "must be greater than or equal to 0"),
			`metadata.generation: Invalid value: -1: must be greater than or equal to 0`},
		{"invalid float", Invalid(spec, 1.5, ""), `spec: Invalid value: 1.5`},
		{"invalid bool", Invalid(spec, true, ""), `spec: Invalid value: true`},
		{"invalid slice as JSON", Invalid(NewPath("values"), []string{"a", "b"}, "d"), `values: Invalid value: ["a","b"]: d`},
		{"invalid nil slice as JSON", Invalid(NewPath("values"), []string(nil), "d"), `values: Invalid value: null: d`},
		{"invalid map as JSON", Invalid(spec, map[string]int{"b": 2, "a": 1}, ""), `spec: Invalid value: {"a":1,"b":2}`},
		{"invalid struct as JSON", Invalid(spec, GroupVersion{Group: "g", Version: "v"}, ""), `spec: Invalid value: {"Group":"g","Version":"v"}`},
		{"invalid pointer", Invalid(spec, &s, ""), `spec: Invalid value: "x"`},
		{"invalid nil pointer", Invalid(spec, nilString, ""), `spec: Invalid value: null`},
		{"invalid nil", Invalid(spec, nil, ""), `spec: Invalid value: null`},
		{"invalid stringer fallback", Invalid(spec, stringerOnly{}, ""), `spec: Invalid value: stringer`},
		{"required", Required(NewPath("metadata", "name"), "name or generateName is required"),
			`metadata.name: Required value: name or generateName is required`},
		{"required without detail", Required(spec.Child("x"), ""), `spec.x: Required value`},
		{"forbidden", Forbidden(NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"),
			`sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`},
		{"not supported", NotSupported(NewPath("propagationPolicy"), "Sideways", []string{"Foreground", "Background", "Orphan", "nil"}),
			`propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`},
		{"not supported without list", NotSupported(spec, "x", nil), `spec: Unsupported value: "x"`},
		{"duplicate", Duplicate(NewPath("metadata", "finalizers").Index(1), "example.com/f"),
			`metadata.finalizers[1]: Duplicate value: "example.com/f"`},
		{"invalid, value omitted", Invalid(spec, map[string]any{"a": 1}, "failed rule: self.a > 1").OmitValue(),
			`spec: Invalid value: failed rule: self.a > 1`},
		{"duplicate, value omitted", Duplicate(spec, []any{1}).OmitValue(), `spec: Duplicate value`},
		{"too long", TooLong(NewPath("metadata", "annotations"), "", 262144),
			`metadata.annotations: Too long: may not be more than 262144 bytes`},
		{"too long one byte", TooLong(spec, "xx", 1), `spec: Too long: may not be more than 1 byte`},
		{"too long without limit", TooLong(spec, "xx", -1), `spec: Too long: value is too long`},
		{"type invalid", TypeInvalid(spec.Child("x"), "string", "spec.x in body must be of type integer: \"string\""),
			`spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"`},
		{"too many", TooMany(spec.Child("items"), 5, 3), `spec.items: Too many: 5: must have at most 3 items`},
		{"too many one", TooMany(spec, 2, 1), `spec: Too many: 2: must have at most 1 item`},
		{"too many unknown", TooMany(spec, -1, -1), `spec: Too many: has too many items`},
		{"internal", InternalFieldError(spec, errors.New("boom")), `spec: Internal error: boom`},
		{"key path", Invalid(NewPath("metadata", "labels").Key("app"), "-x", "bad"), `metadata.labels[app]: Invalid value: "-x": bad`},
		{"index then child", Required(NewPath("spec", "containers").Index(0).Child("name"), ""), `spec.containers[0].name: Required value`},
		{"nil path child", Required((*Path)(nil).Child("a", "b"), ""), `a.b: Required value`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%s:\n got: %s\nwant: %s", tt.name, got, tt.want)
		}
	}
}

func TestFieldErrorsAggregate(t *testing.T) {
	a := Required(NewPath("a"), "")
	b := Invalid(NewPath("b"), "x", "bad")
	tests := []struct {
		name string
		errs FieldErrors
		want string
	}{
		{"none", nil, ""},
		{"empty", FieldErrors{}, ""},
		{"one", FieldErrors{a}, "a: Required value"},
		{"two", FieldErrors{a, b}, `[a: Required value, b: Invalid value: "x": bad]`},
		{"duplicates dropped", FieldErrors{a, b, Required(NewPath("a"), "")}, `[a: Required value, b: Invalid value: "x": bad]`},
		{"duplicates of one", FieldErrors{a, a}, "a: Required value"},
	}
	for _, tt := range tests {
		if got := tt.errs.Error(); got != tt.want {
			t.Errorf("%s:\n got: %s\nwant: %s", tt.name, got, tt.want)
		}
	}
}

func TestFieldErrorTypeStrings(t *testing.T) {
	for typ, want := range map[FieldErrorType]string{
		FieldValueNotFound: "Not found", FieldValueRequired: "Required value", FieldValueDuplicate: "Duplicate value",
		FieldValueInvalid: "Invalid value", FieldValueTypeInvalid: "Invalid value", FieldValueNotSupported: "Unsupported value", FieldValueForbidden: "Forbidden",
		FieldValueTooLong: "Too long", FieldValueTooMany: "Too many", FieldInternal: "Internal error",
	} {
		if typ.String() != want {
			t.Errorf("%s.String() = %q, want %q", string(typ), typ.String(), want)
		}
	}
}
