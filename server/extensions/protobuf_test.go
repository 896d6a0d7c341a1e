package extensions

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/apikit-dev/apikit/internal/k8sproto/k8sprototest"
)

func pbString(b []byte, n protowire.Number, s string) []byte { return pb.Bytes(b, n, []byte(s)) }

// crdBody is a CRD in protobuf whose one version's openAPIV3Schema is the
// JSONSchemaProps message schema.
func crdBody(schema []byte) []byte {
	names := pbString(pbString(nil, 1, "gadgets"), 4, "Gadget")
	version := pb.Varint(pb.Varint(pbString(nil, 1, "v1"), 2, 1), 3, 1)
	version = pb.Bytes(version, 4, pb.Bytes(nil, 1, schema))
	spec := pb.Bytes(pbString(pbString(nil, 1, "example.com"), 4, "Namespaced"), 3, names)
	spec = pb.Bytes(spec, 7, version)
	obj := pb.Bytes(pb.Bytes(nil, 1, pbString(nil, 1, "gadgets.example.com")), 2, spec)
	return pb.Envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", obj)
}

// TestProtobufSchemaJSON: a schema posted in protobuf is kept as the JSON
// kube-apiserver writes for it: the one-of forms (items, additional
// properties, dependencies) as schema, list or bool, JSON values raw, and
// <, >, & escaped as client-go's JSON encoder escapes them.
func TestProtobufSchemaJSON(t *testing.T) {
	typ := func(s string) []byte { return pbString(nil, 5, s) }
	entry := func(k string, v []byte) []byte { return pb.Bytes(pbString(nil, 1, k), 2, v) }
	double := func(b []byte, n protowire.Number, f float64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(b, n, protowire.Fixed64Type), math.Float64bits(f))
	}
	for _, tc := range []struct {
		name   string
		schema []byte
		want   string
	}{
		{"items: one schema", pb.Bytes(typ("array"), 24, pb.Bytes(nil, 1, typ("string"))),
			`{"type":"array","items":{"type":"string"}}`},
		{"items: a list", pb.Bytes(pb.Bytes(typ("array"), 24, pb.Bytes(pb.Bytes(nil, 1, typ("x")), 2, typ("string"))), 24, pb.Bytes(nil, 2, typ("integer"))),
			`{"type":"array","items":[{"type":"string"},{"type":"integer"}]}`},
		{"additionalProperties: false", pb.Bytes(typ("object"), 30, pb.Varint(nil, 1, 0)),
			`{"type":"object","additionalProperties":false}`},
		{"additionalProperties: a schema", pb.Bytes(typ("object"), 30, pb.Bytes(pb.Varint(nil, 1, 1), 2, typ("string"))),
			`{"type":"object","additionalProperties":{"type":"string"}}`},
		{"dependencies", pb.Bytes(pb.Bytes(nil, 32, entry("a", pbString(pbString(nil, 2, "b"), 2, "c"))), 32, entry("d", pb.Bytes(nil, 1, typ("object")))),
			`{"dependencies":{"a":["b","c"],"d":{"type":"object"}}}`},
		{"values and bounds", pb.Varint(pb.Varint(double(pb.Bytes(pb.Bytes(pb.Bytes(typ("integer"), 8, pbString(nil, 1, "3")), 20, pbString(nil, 1, "1")), 20, pbString(nil, 1, "3")), 9, 10.5), 10, 1), 13, 4),
			`{"type":"integer","default":3,"maximum":10.5,"exclusiveMaximum":true,"maxLength":4,"enum":[1,3]}`},
		{"kubernetes extensions", pb.Bytes(pb.Bytes(pbString(pbString(pb.Varint(pb.Varint(typ("object"), 38, 1), 40, 1), 41, "port"), 42, "map"), 44,
			pbString(pbString(pb.Varint(pbString(nil, 1, "self.a > 0"), 6, 0), 4, "FieldValueForbidden"), 5, ".a")), 29, entry("a", typ("integer"))),
			`{"type":"object","properties":{"a":{"type":"integer"}},"x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-int-or-string":true,` +
				`"x-kubernetes-list-map-keys":["port"],"x-kubernetes-list-type":"map","x-kubernetes-validations":[{"rule":"self.a \u003e 0","reason":"FieldValueForbidden","fieldPath":".a","optionalOldSelf":false}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ProtobufToJSON(crdBody(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			var crd CustomResourceDefinition
			if err := json.Unmarshal(got, &crd); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if crd.Name != "gadgets.example.com" || crd.Spec.Names.Kind != "Gadget" || crd.Spec.Scope != NamespaceScoped || len(crd.Spec.Versions) != 1 ||
				!crd.Spec.Versions[0].Served || crd.Spec.Versions[0].Schema == nil {
				t.Fatalf("decoded %s", got)
			}
			if s := string(crd.Spec.Versions[0].Schema.OpenAPIV3Schema); s != tc.want {
				t.Errorf("openAPIV3Schema\n%s\nwant\n%s", s, tc.want)
			}
		})
	}
	if _, err := ProtobufToJSON(crdBody([]byte{0x2a, 0x05})); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("truncated schema: %v", err)
	}
}
