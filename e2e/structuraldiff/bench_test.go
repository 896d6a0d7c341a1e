package structuraldiff

import (
	"context"
	"testing"

	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"

	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// benchSchema and benchCR are schema/structural's benchmark resource: a
// workload with list maps and sets, int-or-string, formats, a pattern, an
// embedded resource, defaults and two unknown fields.
const benchSchema = `{"type":"object","properties":{
 "apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},
 "spec":{"type":"object","required":["image"],"properties":{
  "replicas":{"type":"integer","minimum":0,"maximum":100,"default":1},
  "image":{"type":"string","minLength":1,"maxLength":255,"pattern":"^[a-z0-9./:-]+$"},
  "mode":{"type":"string","enum":["Always","IfNotPresent","Never"],"default":"IfNotPresent"},
  "maxSurge":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}],"default":"25%"},
  "owner":{"type":"string","format":"email"},
  "id":{"type":"string","format":"uuid"},
  "schedule":{"type":"string","format":"date-time"},
  "labels":{"type":"object","additionalProperties":{"type":"string","maxLength":63}},
  "args":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"string"}},
  "tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
  "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"maxItems":16,"items":{"type":"object","required":["name","port"],"properties":{
   "name":{"type":"string"},"port":{"type":"integer","minimum":1,"maximum":65535},"protocol":{"type":"string","enum":["TCP","UDP"],"default":"TCP"}}}},
  "resources":{"type":"object","properties":{"cpu":{"x-kubernetes-int-or-string":true},"memory":{"x-kubernetes-int-or-string":true}}},
  "template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}},
 "status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`

const benchCR = `{"apiVersion":"example.com/v1","kind":"Workload","metadata":{"name":"w","namespace":"default","labels":{"app":"w"}},
 "spec":{"replicas":3,"image":"registry.example.com/app:1.2.3","owner":"ops@example.com","id":"123e4567-e89b-12d3-a456-426614174000",
  "schedule":"2024-01-02T10:00:00Z","labels":{"tier":"web","team":"a"},"args":["--port=8080","--verbose"],"tags":["a","b","c"],
  "ports":[{"name":"http","port":8080},{"name":"https","port":8443,"protocol":"TCP"}],
  "resources":{"cpu":"500m","memory":"256Mi"},"unknownA":1,
  "template":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"c","image":"x"}]}}},
 "status":{"ready":2,"conditions":[{"type":"Ready","status":"True"}]},"unknownB":{"x":1}}`

// BenchmarkApikit is one write through apikit: decode, prune, default,
// validate.
func BenchmarkApikit(b *testing.B) {
	s, err := schema.FromOpenAPIV3([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(benchCR)
	b.ReportAllocs()
	for b.Loop() {
		v, err := structural.DecodeJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		structural.Prune(s, v, true)
		structural.Default(s, v)
		if errs := structural.Validate(s, v); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkKube is the same write through apiextensions-apiserver's code:
// decode, prune (with nulls and metadata coercion), default, then the
// custom resource strategy's schema, embedded-resource and list-type
// validation.
func BenchmarkKube(b *testing.B) {
	t := &testing.T{}
	internal, ss := kubeSchema(t, benchSchema)
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(benchCR)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := structural.DecodeJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		obj := v.(map[string]any)
		structuralpruning.Prune(obj, ss, true)
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, ss)
		if ferr := schemaobjectmeta.Coerce(nil, obj, ss, false, false); ferr != nil {
			b.Fatal(ferr)
		}
		structuraldefaulting.Default(obj, ss)
		errs := apiservervalidation.ValidateCustomResource(nil, obj, validator)
		errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, ss, false)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ss, obj)...)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
