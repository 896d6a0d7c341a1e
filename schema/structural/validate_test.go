package structural

import (
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// mustSchema reads an OpenAPI v3 schema written as JSON.
func mustSchema(t testing.TB, js string) *schema.Schema {
	t.Helper()
	s, err := schema.FromOpenAPIV3([]byte(js))
	if err != nil {
		t.Fatalf("FromOpenAPIV3(%s): %v", js, err)
	}
	return s
}

func mustDecode(t testing.TB, js string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(js))
	if err != nil {
		t.Fatalf("DecodeJSON(%s): %v", js, err)
	}
	return v
}

// spec wraps the schema of one property, x, of spec.
func spec(x string) string {
	return `{"type":"object","properties":{"spec":{"type":"object","properties":{"x":` + x + `}}}}`
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		value  string
		want   []string // the errors' messages, in order
	}{
		{"maximum", `{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer","maximum":10}}}}}`,
			`{"spec":{"replicas":11}}`,
			[]string{`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`}},
		{"maximum met", spec(`{"type":"integer","maximum":10}`), `{"spec":{"x":10}}`, nil},
		{"exclusive maximum", spec(`{"type":"integer","maximum":10,"exclusiveMaximum":true}`), `{"spec":{"x":10}}`,
			[]string{`spec.x: Invalid value: 10: spec.x in body should be less than 10`}},
		{"minimum", spec(`{"type":"number","minimum":1.5}`), `{"spec":{"x":1.2}}`,
			[]string{`spec.x: Invalid value: 1.2: spec.x in body should be greater than or equal to 1.5`}},
		{"an integer meets a bound truncated to an integer, as in kube", spec(`{"type":"number","minimum":1.5}`), `{"spec":{"x":1}}`, nil},
		{"a fractional bound on an integer is itself reported", spec(`{"type":"integer","maximum":10.5}`), `{"spec":{"x":11}}`,
			[]string{
				`<nil>: Invalid value: "": Maximum boundary value must be of type integer (default format) in spec.x`,
				`spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10.5`,
			}},
		{"exclusive minimum", spec(`{"type":"number","minimum":0,"exclusiveMinimum":true}`), `{"spec":{"x":0}}`,
			[]string{`spec.x: Invalid value: 0: spec.x in body should be greater than 0`}},
		{"multipleOf", spec(`{"type":"integer","multipleOf":3}`), `{"spec":{"x":7}}`,
			[]string{`spec.x: Invalid value: 7: spec.x in body should be a multiple of 3`}},
		{"multipleOf float", spec(`{"type":"number","multipleOf":0.1}`), `{"spec":{"x":0.3}}`, nil},
		{"number errors in kube's order", spec(`{"type":"integer","multipleOf":2,"minimum":5,"maximum":0}`), `{"spec":{"x":3}}`,
			[]string{
				`spec.x: Invalid value: 3: spec.x in body should be a multiple of 2`,
				`spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5`,
				`spec.x: Invalid value: 3: spec.x in body should be less than or equal to 0`,
			}},
		{"required", `{"type":"object","properties":{"spec":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}}}`,
			`{"spec":{}}`, []string{`spec.name: Required value`}},
		{"required at the root", `{"type":"object","required":["spec"],"properties":{"spec":{"type":"object"}}}`,
			`{}`, []string{`spec: Required value`}},
		{"enum", spec(`{"type":"string","enum":["a","b"]}`), `{"spec":{"x":"x"}}`,
			[]string{`spec.x: Unsupported value: "x": supported values: "a", "b"`}},
		{"enum of numbers", spec(`{"type":"integer","enum":[1,2]}`), `{"spec":{"x":3}}`,
			[]string{`spec.x: Unsupported value: 3: supported values: "1", "2"`}},
		{"enum matches converted", spec(`{"type":"number","enum":[1,2]}`), `{"spec":{"x":2.0}}`, nil},
		{"type integer given a string", spec(`{"type":"integer"}`), `{"spec":{"x":"1"}}`,
			[]string{`spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"`}},
		{"type string given an object", spec(`{"type":"string"}`), `{"spec":{"x":{}}}`,
			[]string{`spec.x: Invalid value: "object": spec.x in body must be of type string: "object"`}},
		{"type integer given a fraction", spec(`{"type":"integer"}`), `{"spec":{"x":1.5}}`,
			[]string{
				`spec.x: Invalid value: "number": spec.x in body must be of type integer: "number"`,
				`<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.x`,
			}},
		{"integral float is an integer", spec(`{"type":"integer"}`), `{"spec":{"x":2.0}}`, nil},
		{"integer is a number", spec(`{"type":"number"}`), `{"spec":{"x":2}}`, nil},
		{"null not nullable", spec(`{"type":"string"}`), `{"spec":{"x":null}}`,
			[]string{`spec.x: Invalid value: "null": spec.x in body must be of type string: "null"`}},
		{"null nullable", spec(`{"type":"string","nullable":true}`), `{"spec":{"x":null}}`, nil},
		{"int-or-string", spec(`{"x-kubernetes-int-or-string":true}`), `{"spec":{"x":true}}`,
			[]string{`spec.x: Invalid value: "boolean": spec.x in body must be of type integer,string: "boolean"`}},
		{"int-or-string accepts both", `{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true},"b":{"x-kubernetes-int-or-string":true}}}`,
			`{"a":1,"b":"50%"}`, nil},
		{"maxLength", spec(`{"type":"string","maxLength":3}`), `{"spec":{"x":"abcd"}}`,
			[]string{`spec.x: Too long: may not be more than 3 bytes`}},
		{"maxLength counts characters", spec(`{"type":"string","maxLength":3}`), `{"spec":{"x":"äöü"}}`, nil},
		{"minLength", spec(`{"type":"string","minLength":3}`), `{"spec":{"x":"ab"}}`,
			[]string{`spec.x: Invalid value: "ab": spec.x in body should be at least 3 chars long`}},
		{"pattern", spec(`{"type":"string","pattern":"^[a-z]+$"}`), `{"spec":{"x":"A"}}`,
			[]string{`spec.x: Invalid value: "A": spec.x in body should match '^[a-z]+$'`}},
		{"string stops at its first error", spec(`{"type":"string","minLength":3,"pattern":"^[a-z]+$"}`), `{"spec":{"x":"A"}}`,
			[]string{`spec.x: Invalid value: "A": spec.x in body should be at least 3 chars long`}},
		{"minItems", spec(`{"type":"array","minItems":2,"items":{"type":"string"}}`), `{"spec":{"x":["a"]}}`,
			[]string{`spec.x: Invalid value: 1: spec.x in body should have at least 2 items`}},
		{"maxItems", spec(`{"type":"array","maxItems":1,"items":{"type":"string"}}`), `{"spec":{"x":["a","b"]}}`,
			[]string{`spec.x: Too many: 2: must have at most 1 item`}},
		{"uniqueItems", spec(`{"type":"array","uniqueItems":true,"items":{"type":"string"}}`), `{"spec":{"x":["a","a"]}}`,
			[]string{`spec.x: Invalid value: "": spec.x in body shouldn't contain duplicates`}},
		{"items path", spec(`{"type":"array","items":{"type":"integer","minimum":0}}`), `{"spec":{"x":[1,-1]}}`,
			[]string{`spec.x[1]: Invalid value: -1: spec.x[1] in body should be greater than or equal to 0`}},
		{"additionalProperties path", spec(`{"type":"object","additionalProperties":{"type":"string","maxLength":1}}`), `{"spec":{"x":{"k":"long"}}}`,
			[]string{`spec.x.k: Too long: may not be more than 1 byte`}},
		{"minProperties", spec(`{"type":"object","minProperties":2,"additionalProperties":{"type":"string"}}`), `{"spec":{"x":{"a":"b"}}}`,
			[]string{`spec.x: Invalid value: 1: spec.x in body should have at least 2 properties`}},
		{"maxProperties and the values", spec(`{"type":"object","maxProperties":1,"additionalProperties":{"type":"integer"}}`), `{"spec":{"x":{"a":"b","c":1}}}`,
			[]string{
				`spec.x: Too many: 2: must have at most 1 item`,
				`spec.x.a: Invalid value: "string": spec.x.a in body must be of type integer: "string"`,
			}},
		{"format uuid", spec(`{"type":"string","format":"uuid"}`), `{"spec":{"x":"nope"}}`,
			[]string{`spec.x: Invalid value: "nope": spec.x in body must be of type uuid: "nope"`}},
		{"format date-time", spec(`{"type":"string","format":"date-time"}`), `{"spec":{"x":"2024-01-02 10:00"}}`,
			[]string{`spec.x: Invalid value: "2024-01-02 10:00": spec.x in body must be of type date-time: "2024-01-02 10:00"`}},
		{"format date-time valid", spec(`{"type":"string","format":"date-time"}`), `{"spec":{"x":"2024-01-02T10:00:00Z"}}`, nil},
		{"format int32", spec(`{"type":"integer","format":"int32"}`), `{"spec":{"x":9999999999}}`,
			[]string{`<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.x`}},
		{"format int64 given a float beyond it", spec(`{"type":"integer","format":"int64"}`), `{"spec":{"x":1e19}}`,
			[]string{
				`spec.x: Invalid value: "float64": spec.x in body must be of type int64: "float64"`,
				`<nil>: Invalid value: "": Checked value must be of type integer with format int64 in spec.x`,
			}},
		{"format float", spec(`{"type":"number","format":"float"}`), `{"spec":{"x":1e39}}`,
			[]string{`<nil>: Invalid value: "": Checked value must be of type number with format float in spec.x`}},
		{"format int32 on a string is ignored", spec(`{"type":"string","format":"int32"}`), `{"spec":{"x":"x"}}`, nil},
		{"unknown format is ignored", spec(`{"type":"string","format":"k8s-nonsense"}`), `{"spec":{"x":"%%"}}`, nil},
		{"anyOf", spec(`{"type":"integer","anyOf":[{"minimum":5},{"maximum":1}]}`), `{"spec":{"x":3}}`,
			[]string{
				`<nil>: Invalid value: "": "spec.x" must validate at least one schema (anyOf)`,
				`spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5`,
			}},
		{"anyOf met", spec(`{"type":"integer","anyOf":[{"minimum":5},{"maximum":3}]}`), `{"spec":{"x":3}}`, nil},
		{"oneOf two valid", spec(`{"type":"integer","oneOf":[{"minimum":1},{"maximum":5}]}`), `{"spec":{"x":3}}`,
			[]string{`<nil>: Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found 2 valid alternatives`}},
		{"allOf", spec(`{"type":"integer","allOf":[{"minimum":5}]}`), `{"spec":{"x":3}}`,
			[]string{
				`spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5`,
				`<nil>: Invalid value: "": "spec.x" must validate all the schemas (allOf). None validated`,
			}},
		{"not", spec(`{"type":"string","not":{"enum":["no"]}}`), `{"spec":{"x":"no"}}`,
			[]string{`<nil>: Invalid value: "": "spec.x" must not validate the schema (not)`}},
		{"list-type set duplicates", spec(`{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}`), `{"spec":{"x":["a","b","a","a"]}}`,
			[]string{`spec.x[2]: Duplicate value: "a"`}},
		{"list-type map duplicates", spec(`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"name":{"type":"string"},"v":{"type":"integer"}}}}`),
			`{"spec":{"x":[{"name":"a","v":1},{"name":"a","v":2}]}}`,
			[]string{`spec.x[1]: Duplicate value: {"name":"a"}`}},
		{"list-type map keys are compared as given (defaults come before)", spec(`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name","proto"],"items":{"type":"object","properties":{"name":{"type":"string"},"proto":{"type":"string","default":"TCP"}}}}`),
			`{"spec":{"x":[{"name":"a"},{"name":"a","proto":"TCP"},{"name":"a","proto":"UDP"},{"name":"b"},{"name":"b"}]}}`,
			[]string{`spec.x[4]: Duplicate value: {"name":"b"}`}},
		{"list-type map items without their key", spec(`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"name":{"type":"string"},"v":{"type":"integer"}}}}`),
			`{"spec":{"x":[{"v":1},{"v":2}]}}`,
			[]string{`spec.x[1]: Duplicate value: {}`}},
		{"list-type map items must be objects", spec(`{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"name":{"type":"string"}}}}`),
			`{"spec":{"x":[1]}}`,
			[]string{
				`spec.x[0]: Invalid value: "integer": spec.x[0] in body must be of type object: "integer"`,
				`spec.x[0]: Invalid value: 1: must be an object for an array of list-type map`,
			}},
		{"embedded resource", spec(`{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}`),
			`{"spec":{"x":{"kind":"Pod","metadata":{"name":"a/b","labels":{"-bad":"x"}}}}}`,
			[]string{
				`spec.x.apiVersion: Required value`,
				`spec.x.metadata.labels: Invalid value: "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`spec.x.metadata.name: Invalid value: "a/b": may not contain '/'`,
			}},
		{"embedded resource kind", spec(`{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}`),
			`{"spec":{"x":{"apiVersion":"v1","kind":"my_kind"}}}`,
			[]string{`spec.x.kind: Invalid value: "my_kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}},
		{"additionalProperties false", spec(`{"type":"object","additionalProperties":false}`), `{"spec":{"x":{"b":1,"a":2}}}`,
			[]string{
				`spec.x: Invalid value: "a": spec.x.a in body is a forbidden property`,
				`spec.x: Invalid value: "b": spec.x.b in body is a forbidden property`,
			}},
		{"root is not an embedded resource", `{"type":"object","properties":{"spec":{"type":"object"}}}`, `{"spec":{}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, tt.schema)
			errs := Validate(s, mustDecode(t, tt.value))
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}

func TestValidateTypeErrorReason(t *testing.T) {
	errs := Validate(mustSchema(t, spec(`{"type":"integer"}`)), mustDecode(t, `{"spec":{"x":"1"}}`))
	if len(errs) != 1 || errs[0].Type != "FieldValueTypeInvalid" || errs[0].Field != "spec.x" {
		t.Fatalf("errs = %v, want one FieldValueTypeInvalid at spec.x", errs)
	}
}

// TestValidateValuesUnderBase checks the validation of a value found
// under a path, as a custom resource's status on /status: the fields
// carry the path, the messages name the path from the value, as
// kube-apiserver's validator of the status schema words them.
func TestValidateValuesUnderBase(t *testing.T) {
	s := mustSchema(t, `{"type":"object","properties":{"replicas":{"type":"integer","maximum":3},"items":{"type":"array","items":{"type":"string"}}}}`)
	errs := ValidateValues(s, mustDecode(t, `{"replicas":"x","items":["a",1]}`), meta.NewPath("status"))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`status.items[1]: Invalid value: "integer": items[1] in body must be of type string: "integer"`,
		`status.replicas: Invalid value: "string": replicas in body must be of type integer: "string"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ValidateValues:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func TestFormats(t *testing.T) {
	tests := []struct {
		format string
		good   []string
		bad    []string
	}{
		{"uuid", []string{"123e4567-e89b-12d3-a456-426614174000", "123E4567E89B12D3A456426614174000"}, []string{"x", "123e4567-e89b-12d3-a456-42661417400"}},
		{"date-time", []string{"2024-01-02T10:00:00Z", "2024-01-02T10:00:00.5+01:00", "2024-01-02t10:00:00z"}, []string{"2024-01-02", "2024-01-02T25:00:00Z", "2024-13-02T10:00:00Z"}},
		{"date", []string{"2024-02-29"}, []string{"2023-02-29", "24-01-01"}},
		{"byte", []string{"aGVsbG8=", "aGk="}, []string{"not base64!", ""}},
		{"hostname", []string{"example.com", "a", "my-host.example.com"}, []string{"-a.com", "a..b", strings.Repeat("a", 64) + ".com"}},
		{"ipv4", []string{"10.0.0.1", "010.0.0.1"}, []string{"10.0.0", "::1", "256.0.0.1"}},
		{"ipv6", []string{"::1", "fe80::1"}, []string{"10.0.0.1", "x"}},
		{"cidr", []string{"10.0.0.0/8", "::/0"}, []string{"10.0.0.0", "10.0.0.0/33"}},
		{"email", []string{"a@example.com"}, []string{"a", "@"}},
		{"uri", []string{"https://example.com/x", "/relative"}, []string{"no scheme", ""}},
		{"mac", []string{"00:1a:2b:3c:4d:5e"}, []string{"00:1a"}},
		{"duration", []string{"1h30m", "3 days", "5s"}, []string{"forever", "3 fortnights"}},
		{"isbn10", []string{"0321751043"}, []string{"0321751044"}},
		{"isbn13", []string{"978-0321751041"}, []string{"978-0321751042"}},
		{"creditcard", []string{"4111 1111 1111 1111"}, []string{"4111 1111 1111 1112"}},
		{"ssn", []string{"123-45-6789"}, []string{"123456789x"}},
		{"hexcolor", []string{"#fff", "a0b1c2"}, []string{"#ffff"}},
		{"rgbcolor", []string{"rgb(255, 0, 10)"}, []string{"rgb(256,0,0)"}},
		{"k8s-short-name", []string{"my-name", "a"}, []string{"My-name", "-a", strings.Repeat("a", 64)}},
		{"k8s-long-name", []string{"a.b-c.d"}, []string{"a..b", "A.b", strings.Repeat("a", 254)}},
		{"bsonobjectid", []string{"507f1f77bcf86cd799439011"}, []string{"507f1f77bcf86cd79943901"}},
		{"password", []string{"anything"}, nil},
	}
	for _, tt := range tests {
		n := supportedFormat(tt.format)
		if n == "" {
			t.Errorf("format %q is not supported", tt.format)
			continue
		}
		for _, g := range tt.good {
			if !formatValid(n, g) {
				t.Errorf("%s: %q refused", tt.format, g)
			}
		}
		for _, b := range tt.bad {
			if formatValid(n, b) {
				t.Errorf("%s: %q accepted", tt.format, b)
			}
		}
	}
	for _, f := range []string{"int32", "int64", "float", "double", "k8s-nonsense", ""} {
		if supportedFormat(f) != "" {
			t.Errorf("format %q is validated as a string format; kube-apiserver does not", f)
		}
	}
}
