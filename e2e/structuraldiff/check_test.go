package structuraldiff

import (
	"reflect"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/schema/structural"
)

const schemaPath = "spec.versions[0].schema.openAPIV3Schema"

// checkSchemas are CRD schemas, structural or not, for CheckStructural.
var checkSchemas = []string{
	`{"type":"object","properties":{"a":{}}}`,
	`{"type":"object","properties":{"a":{"type":"array","items":{}}}}`,
	`{"properties":{"a":{"type":"string"}}}`,
	`{"type":"string"}`,
	`{"type":"object","properties":{"a":{"type":"array"}}}`,
	`{"type":"object","properties":{"a":{"$ref":"#/definitions/x"}}}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"type":"object","properties":{"a":{"type":"string","anyOf":[{"type":"string","maxLength":3},{"description":"d","nullable":true}]}}}`,
	`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"allOf":[{"x-kubernetes-list-type":"set","default":[]}]}}}`,
	`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}},"oneOf":[{"required":["a"]},{"properties":{"a":{"properties":{"c":{"maxLength":1}}}}}]}`,
	`{"type":"object","properties":{"a":{"type":"string"}},"anyOf":[{"properties":{"a":{"items":{"maxLength":1}}}}]}`,
	`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"oneOf":[{"properties":{"c":{"maxLength":1}}}]}}}`,
	`{"type":"object","properties":{"a":{"type":"object","anyOf":[{"properties":{"metadata":{}}}]}}}`,
	`{"type":"object","properties":{"a":{"type":"object","allOf":[{"x-kubernetes-map-type":"atomic","x-kubernetes-validations":[{"rule":"true"}]}]}}}`,
	`{"type":"object","properties":{"metadata":{"type":"object","nullable":false,"description":"","properties":{"name":{"type":"string"},"generateName":{"type":"string"}}}}}`,
	`{"type":"object","properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}}}}`,
	`{"type":"object","properties":{"kind":{"type":"integer"}}}`,
	`{"type":"object","properties":{"a":{"type":"string","x-kubernetes-embedded-resource":true}}}`,
	`{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true,"x-kubernetes-preserve-unknown-fields":true}}}`,
	`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
	`{"type":"object","properties":{"spec":{"type":"object","properties":{"replicas":{"type":"integer","maximum":10,"default":11}}}}}`,
	`{"type":"object","properties":{"a":{"type":"integer","default":"x"}}}`,
	`{"type":"object","properties":{"a":{"type":"object","default":{"b":"long"},"properties":{"b":{"type":"string","maxLength":2}}}}}`,
	`{"type":"object","properties":{"a":{"type":"object","default":{"x":1},"properties":{"b":{"type":"string"}}}}}`,
	`{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","default":"x"}}}}}`,
	`{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"},"default":["x","x"]}}}`,
	`{"type":"object","nullable":true}`,
	`{"type":"object","properties":{"a":{"type":"object","id":"x","patternProperties":{},"additionalItems":false}}}`,
	`{"type":"object","properties":{"a":{"type":"array","uniqueItems":true,"items":{"type":"string"}}}}`,
	`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":{"type":"string"}}}}`,
	`{"type":"object","properties":{"a":{"type":"object","x-kubernetes-preserve-unknown-fields":false}}}`,
	`{"type":"object","properties":{"a":{"type":"object","x-kubernetes-list-type":"set"}}}`,
	`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"bag"}}}`,
	`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}}},"x-kubernetes-list-type":"set","x-kubernetes-list-map-keys":["k"]}}}`,
	`{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k","o","missing"],"items":{"type":"object","properties":{"k":{"type":"string","nullable":true},"o":{"type":"object"}}}}}}`,
	`{"type":"object","x-kubernetes-validations":[{"rule":" "},{"rule":"self.a","message":"two\nlines"},{"rule":"x","reason":"Nope"}]}`,
	`{"type":"object","properties":{"metadata":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}`,
	`{"type":"object","properties":{"a":{"type":"object","x-kubernetes-map-type":"bag"},"b":{"type":"string","x-kubernetes-map-type":"atomic"}}}`,
	`{"type":"object","properties":{"a":{"type":"null"},"b":{"type":"wat"}}}`,
	`{"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}},"kind":{"type":"string","default":"K"}}}}}`,
	`{"type":"object","properties":{"a":{"x-kubernetes-int-or-string":true,"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},{"pattern":"^x"}]}}}`,
	`{"type":"object","properties":{"a":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object","required":["k"],"properties":{"k":{"type":"string"}}}},"b":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"string"}}}}`,
	`{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"object","properties":{"b":{"type":"string","default":"x"}}}}}}`,
	`{"type":"object","properties":{"a":{"type":"integer","default":1.5},"b":{"type":"string","format":"date","default":"2024-13-01"},"c":{"type":"object","nullable":true,"default":null}}}`,
}

func TestCheckStructuralMatchesKube(t *testing.T) {
	schemas := append([]string(nil), checkSchemas...)
	for _, c := range cases {
		schemas = append(schemas, c.schema)
	}
	for _, js := range schemas {
		var want []string
		// With one version, kube's internal CRD holds the schema at
		// spec.validation, and reports it there.
		const internalPath = "spec.validation.openAPIV3Schema"
		for _, m := range kubeCheckSchema(t, js) {
			m = strings.ReplaceAll(m, internalPath, schemaPath)
			if strings.HasPrefix(m, schemaPath) {
				want = append(want, m)
			}
		}
		raw, ok := decode(t, js).(map[string]any)
		if !ok {
			t.Fatalf("schema %s is not an object", js)
		}
		var got []string
		for _, e := range structural.CheckStructural(raw, schemaPath) {
			got = append(got, e.Error())
		}
		if !reflect.DeepEqual(sorted(got), sorted(want)) {
			t.Errorf("%s:\n apikit: %s\n   kube: %s", js, strings.Join(sorted(got), "\n         "), strings.Join(sorted(want), "\n         "))
		}
	}
}
