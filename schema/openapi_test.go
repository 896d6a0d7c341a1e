package schema_test

import (
	"strings"
	"testing"

	smd "sigs.k8s.io/structured-merge-diff/v6/schema"

	"github.com/apikit-dev/apikit/schema"
)

// crd is a CustomResourceDefinition's openAPIV3Schema, as users write them.
const crd = `{
  "type": "object",
  "properties": {
    "spec": {
      "type": "object",
      "required": ["ports"],
      "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
          "items": {"type": "object", "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer", "format": "int32", "minimum": 1}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
        "raw": {"x-kubernetes-preserve-unknown-fields": true},
        "mode": {"type": "string", "enum": ["a", "b"], "description": "How."}
      }
    }
  }
}`

func TestFromOpenAPIV3(t *testing.T) {
	n, err := schema.FromOpenAPIV3([]byte(crd))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := n.Property("spec")
	ports, _ := spec.Property("ports")
	if ports.ListType != schema.ListMap || strings.Join(ports.ListMapKeys, ",") != "name,protocol" || !spec.IsRequired("ports") {
		t.Errorf("ports = %+v", ports)
	}
	if port, _ := ports.Items.Property("port"); port.Type != "integer" || port.Format != "int32" || port.Minimum == nil || *port.Minimum != 1 {
		t.Errorf("port = %+v", port)
	}
	if tags, _ := spec.Property("tags"); tags.ListType != schema.ListSet {
		t.Errorf("tags = %+v", tags)
	}
	if sel, _ := spec.Property("selector"); sel.MapType != schema.MapAtomic || sel.AdditionalProperties.Type != "string" {
		t.Errorf("selector = %+v", sel)
	}
	if raw, _ := spec.Property("raw"); !raw.Unknown {
		t.Errorf("raw = %+v", raw)
	}
	if mode, _ := spec.Property("mode"); len(mode.Enum) != 2 || mode.Description != "How." {
		t.Errorf("mode = %+v", mode)
	}

	// A CRD's schema takes its seat in a Set, and server-side apply's
	// schema is made from it as from a Go type's.
	set := schema.NewSet()
	if err := set.Add("com.example.v1.Widget", n); err != nil {
		t.Fatal(err)
	}
	s, err := set.SMD()
	if err != nil {
		t.Fatal(err)
	}
	w, ok := s.FindNamedType("com.example.v1.Widget")
	if !ok {
		t.Fatal("no typedef for the CRD")
	}
	f, _ := w.Map.FindField("spec")
	pf, _ := f.Type.Inlined.Map.FindField("ports")
	if pf.Type.Inlined.List == nil || pf.Type.Inlined.List.ElementRelationship != smd.Associative || len(pf.Type.Inlined.List.Keys) != 2 {
		t.Errorf("ports in SMD = %+v", pf.Type)
	}
}

func TestFromOpenAPIV3Errors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"not JSON", `{`, "decoding an OpenAPI v3 schema"},
		{"ref", `{"properties":{"a":{"$ref":"#/x"}}}`, ".a: $ref is not allowed"},
		{"list without items", `{"type":"array"}`, "<root>: a list needs items"},
		{"unknown type", `{"type":"date"}`, `unknown type "date"`},
		{"map list without keys", `{"type":"array","x-kubernetes-list-type":"map","items":{"type":"object"}}`, "needs x-kubernetes-list-map-keys"},
		{"keys the items lack", `{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["id"],"items":{"type":"object"}}`, `names "id", which the items do not have`},
		{"list type on a string", `{"type":"string","x-kubernetes-list-type":"set"}`, "is for lists, not a string"},
		{"map type on a list", `{"type":"array","items":{"type":"string"},"x-kubernetes-map-type":"atomic"}`, "is for objects, not an array"},
		{"untyped anyOf", `{"anyOf":[{"type":"string"}]}`, "anyOf without a type is not structural"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := schema.FromOpenAPIV3([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFromOpenAPIV3ReadsValueValidations(t *testing.T) {
	s, err := schema.FromOpenAPIV3([]byte(`{"type":"object","properties":{
		"replicas":{"type":"integer","minimum":1,"maximum":10,"exclusiveMaximum":true,"multipleOf":2},
		"name":{"type":"string","minLength":1,"maxLength":63,"pattern":"^[a-z]+$"},
		"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":5,"uniqueItems":true},
		"port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
		"template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},
		"labels":{"type":"object","additionalProperties":{"type":"string"},"maxProperties":3}},
		"x-kubernetes-validations":[{"rule":"self.replicas >= 1","message":"too few","reason":"FieldValueForbidden","fieldPath":".replicas","optionalOldSelf":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	prop := func(name string) *schema.Schema {
		for _, p := range s.Properties {
			if p.Name == name {
				return p.Schema
			}
		}
		t.Fatalf("no property %q", name)
		return nil
	}
	r, n, tags, port, tmpl, labels := prop("replicas"), prop("name"), prop("tags"), prop("port"), prop("template"), prop("labels")
	switch {
	case !r.ExclusiveMaximum || r.ExclusiveMinimum || r.MultipleOf == nil || *r.MultipleOf != 2:
		t.Errorf("replicas: %+v", r)
	case *n.MinLength != 1 || *n.MaxLength != 63 || n.Pattern != "^[a-z]+$":
		t.Errorf("name: %+v", n)
	case *tags.MinItems != 1 || *tags.MaxItems != 5 || !tags.UniqueItems:
		t.Errorf("tags: %+v", tags)
	case !port.IntOrString || len(port.AnyOf) != 2 || port.AnyOf[1].Type != "string":
		t.Errorf("port: %+v", port)
	case !tmpl.EmbeddedResource || !tmpl.Unknown:
		t.Errorf("template: %+v", tmpl)
	case *labels.MaxProperties != 3 || labels.MinProperties != nil:
		t.Errorf("labels: %+v", labels)
	}
	if len(s.Validations) != 1 || s.Validations[0].Rule != "self.replicas >= 1" || s.Validations[0].Reason != "FieldValueForbidden" ||
		s.Validations[0].FieldPath != ".replicas" || s.Validations[0].OptionalOldSelf == nil || !*s.Validations[0].OptionalOldSelf {
		t.Errorf("validations: %+v", s.Validations)
	}
	if _, err := schema.FromOpenAPIV3([]byte(`{"type":"string","maxLength":-1}`)); err == nil {
		t.Error("a negative maxLength was accepted")
	}
}

// TestFromOpenAPIV3ReadsJunctorsWithoutTypes reads value validations under
// allOf/anyOf/oneOf/not, which state no type (a structural schema may not
// state one there), as the Gateway API's Gateway does: a oneOf of
// alternatives whose properties carry anyOf without types.
func TestFromOpenAPIV3ReadsJunctorsWithoutTypes(t *testing.T) {
	const gatewayLike = `{"type": "object", "properties": {"addresses": {"type": "array", "items": {
	  "type": "object",
	  "properties": {"type": {"type": "string"}, "value": {"type": "string"}},
	  "oneOf": [
	    {"properties": {"type": {"enum": ["IPAddress"]}, "value": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}},
	    {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}}
	  ]}}}}`
	n, err := schema.FromOpenAPIV3([]byte(gatewayLike))
	if err != nil {
		t.Fatal(err)
	}
	addresses, _ := n.Property("addresses")
	alt := addresses.Items.OneOf[0]
	value, ok := alt.Property("value")
	if !ok || len(value.AnyOf) != 2 || value.AnyOf[1].Format != "ipv6" {
		t.Fatalf("oneOf[0].properties.value = %+v", value)
	}
}
