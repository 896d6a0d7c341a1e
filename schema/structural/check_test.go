package structural

import (
	"strings"
	"testing"
)

func TestCheckStructural(t *testing.T) {
	const at = "spec.versions[0].schema.openAPIV3Schema"
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{"structural", `{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","maxLength":10}}},
			"spec":{"type":"object","properties":{"replicas":{"type":"integer","default":1,"minimum":0},"port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}}}}}`, nil},
		{"property without type", `{"type":"object","properties":{"a":{}}}`,
			[]string{at + ".properties[a].type: Required value: must not be empty for specified object fields"}},
		{"items without type", `{"type":"object","properties":{"a":{"type":"array","items":{}}}}`,
			[]string{at + ".properties[a].items.type: Required value: must not be empty for specified array items"}},
		{"root without type", `{"properties":{"a":{"type":"string"}}}`,
			[]string{at + ".type: Required value: must not be empty at the root"}},
		{"root not an object", `{"type":"string"}`,
			[]string{at + ".type: Invalid value: \"string\": must be object at the root"}},
		{"array without items", `{"type":"object","properties":{"a":{"type":"array"}}}`,
			[]string{at + ".properties[a].items: Required value: must be specified"}},
		{"$ref", `{"type":"object","properties":{"a":{"$ref":"#/definitions/x"}}}`,
			[]string{at + ".properties[a].$ref: Forbidden: $ref is not supported"}},
		{"additionalProperties at the root", `{"type":"object","additionalProperties":{"type":"string"}}`,
			[]string{at + ".additionalProperties: Forbidden: must not be used at the root"}},
		{"type under anyOf", `{"type":"object","properties":{"a":{"type":"string","anyOf":[{"type":"string","maxLength":3},{"description":"d","nullable":true}]}}}`,
			[]string{
				at + ".properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
				at + ".properties[a].anyOf[1].description: Forbidden: must be empty to be structural",
				at + ".properties[a].anyOf[1].nullable: Forbidden: must be false to be structural",
			}},
		{"extensions under allOf", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"allOf":[{"x-kubernetes-list-type":"set","default":[]}]}}}`,
			[]string{
				at + ".properties[a].allOf[0].default: Forbidden: must be undefined to be structural",
				at + ".properties[a].allOf[0].x-kubernetes-list-type: Forbidden: must be undefined to be structural",
				at + ".properties[a].allOf[0].type: Required value: must be array if x-kubernetes-list-type is specified",
			}},
		{"value validation names a property the schema lacks", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}},"oneOf":[{"required":["a"]},{"properties":{"a":{"properties":{"c":{"maxLength":1}}}}}]}`,
			[]string{at + ".properties[a].properties[c]: Required value: because it is defined in " + at + ".oneOf[1].properties[a].properties[c]"}},
		{"items named by a value validation", `{"type":"object","properties":{"a":{"type":"string"}},"anyOf":[{"properties":{"a":{"items":{"maxLength":1}}}}]}`,
			[]string{at + ".properties[a].items: Required value: because it is defined in " + at + ".anyOf[0].properties[a].items"}},
		{"nested junctors are not held to completeness", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"oneOf":[{"properties":{"c":{"maxLength":1}}}]}}}`, nil},
		{"metadata in a nested context", `{"type":"object","properties":{"a":{"type":"object","anyOf":[{"properties":{"metadata":{}}}]}}}`,
			[]string{at + ".properties[a].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"}},
		{"nested map-type and validations", `{"type":"object","properties":{"a":{"type":"object","allOf":[{"x-kubernetes-map-type":"atomic","x-kubernetes-validations":[{"rule":"true"}]}]}}}`,
			[]string{
				at + ".properties[a].allOf[0].x-kubernetes-map-type: Forbidden: must be undefined to be structural",
				at + ".properties[a].allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
				at + ".properties[a].allOf[0].type: Required value: must be object if x-kubernetes-map-type is specified",
			}},
		{"metadata restating only zero values", `{"type":"object","properties":{"metadata":{"type":"object","nullable":false,"description":"","properties":{"name":{"type":"string"},"generateName":{"type":"string"}}}}}`, nil},
		{"metadata beyond name", `{"type":"object","properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}}}}`,
			[]string{at + ".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"}},
		{"kind not a string", `{"type":"object","properties":{"kind":{"type":"integer"}}}`,
			[]string{at + ".properties[kind].type: Invalid value: \"integer\": must be string"}},
		{"embedded resource not an object", `{"type":"object","properties":{"a":{"type":"string","x-kubernetes-embedded-resource":true}}}`,
			[]string{
				at + ".properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
				at + ".properties[a].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
			}},
		{"int-or-string with preserve-unknown-fields", `{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true,"x-kubernetes-preserve-unknown-fields":true}}}`,
			[]string{at + ".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"}},
		{"bad pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
			[]string{at + ".properties[a].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(`"}},
		{"default invalid", `{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer","maximum":10,"default":11}}}}}`,
			[]string{at + ".properties[spec].properties[replicas].default: Invalid value: 11:  in body should be less than or equal to 10"}},
		{"default of the wrong type", `{"type":"object","properties":{"a":{"type":"integer","default":"x"}}}`,
			[]string{at + ".properties[a].default: Invalid value: \"string\":  in body must be of type integer: \"string\""}},
		{"default nested field invalid", `{"type":"object","properties":{"a":{"type":"object","default":{"b":"long"},"properties":{"b":{"type":"string","maxLength":2}}}}}`,
			[]string{at + ".properties[a].default.b: Too long: may not be more than 2 bytes"}},
		{"default with unknown fields", `{"type":"object","properties":{"a":{"type":"object","default":{"x":1},"properties":{"b":{"type":"string"}}}}}`,
			[]string{at + ".properties[a].default: Invalid value: {\"x\":1}: must not have unknown fields"}},
		{"default in metadata", `{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"x"}}}}}`,
			[]string{at + ".properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata"}},
		{"defaults are not held to their list type, as in kube", `{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"},"default":["x","x"]}}}`, nil},
		{"a default with unknown fields is validated too", `{"type":"object","properties":{"a":{"type":"object","default":{"x":1,"b":"long"},"properties":{"b":{"type":"string","maxLength":2}}}}}`,
			[]string{
				at + ".properties[a].default: Invalid value: {\"b\":\"long\",\"x\":1}: must not have unknown fields",
				at + ".properties[a].default.b: Too long: may not be more than 2 bytes",
			}},
		{"nullable root", `{"type":"object","nullable":true}`,
			[]string{at + ".nullable: Forbidden: nullable cannot be true at the root"}},
		{"unsupported fields", `{"type":"object","properties":{"a":{"type":"object","id":"x","patternProperties":{"^a":{"type":"string"}},"additionalItems":false}}}`,
			[]string{
				at + ".properties[a].id: Forbidden: id is not supported",
				at + ".properties[a].additionalItems: Forbidden: additionalItems is not supported",
				at + ".properties[a].patternProperties: Forbidden: patternProperties is not supported",
			}},
		{"uniqueItems", `{"type":"object","properties":{"a":{"type":"array","uniqueItems":true,"items":{"type":"string"}}}}`,
			[]string{at + ".properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"}},
		{"additionalProperties beside properties", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":{"type":"string"}}}}`,
			[]string{at + ".properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"}},
		{"preserve-unknown-fields false", `{"type":"object","properties":{"a":{"type":"object","x-kubernetes-preserve-unknown-fields":false}}}`,
			[]string{at + ".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"}},
		{"list-type on an object", `{"type":"object","properties":{"a":{"type":"object","x-kubernetes-list-type":"set"}}}`,
			[]string{at + ".properties[a].type: Invalid value: \"object\": must be array if x-kubernetes-list-type is specified"}},
		{"unknown list-type", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"bag"}}}`,
			[]string{at + ".properties[a].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""}},
		{"list-map-keys without map", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}},"x-kubernetes-list-type":"set","x-kubernetes-list-map-keys":["k"]}}}`,
			[]string{
				at + ".properties[a].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
				at + ".properties[a].x-kubernetes-list-type: Invalid value: \"set\": must be map if x-kubernetes-list-map-keys is non-empty",
			}},
		{"map list keys", `{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k","o","missing"],
			"items":{"type":"object","properties":{"k":{"type":"string","nullable":true},"o":{"type":"object"}}}}}}`,
			[]string{
				at + ".properties[a].items.properties[o].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map",
				at + `.properties[a].x-kubernetes-list-map-keys: Invalid value: ["k","o","missing"]: entries must all be names of item properties`,
				at + ".properties[a].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
				at + ".properties[a].items.properties[k].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
				at + ".properties[a].items.properties[o].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
			}},
		{"validation rules", `{"type":"object","x-kubernetes-validations":[{"rule":" "},{"rule":"self.a","message":"two\nlines"},{"rule":"x","reason":"Nope"}]}`,
			[]string{
				at + ".x-kubernetes-validations[0].rule: Required value: rule is not specified",
				at + ".x-kubernetes-validations[1].message: Invalid value: \"two\\nlines\": must not contain line breaks",
				at + `.x-kubernetes-validations[2].reason: Unsupported value: "Nope": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"`,
			}},
		{"embedded resource inside metadata", `{"type":"object","properties":{"metadata":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}`,
			[]string{
				at + ".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
				at + ".properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, ok := mustDecode(t, tt.schema).(map[string]any)
			if !ok {
				t.Fatalf("schema %s is not an object", tt.schema)
			}
			var got []string
			for _, e := range CheckStructural(raw, at) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("CheckStructural:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}
