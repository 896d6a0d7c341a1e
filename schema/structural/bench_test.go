package structural

import (
	"testing"
)

// benchSchema is a typical CRD schema: a workload with a pod-template-like
// spec, list maps, int-or-string, formats, patterns and defaults, and a
// status that preserves unknown fields.
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

// benchCR is a custom resource of benchSchema with a few defaults missing
// and two unknown fields.
const benchCR = `{"apiVersion":"example.com/v1","kind":"Workload","metadata":{"name":"w","namespace":"default","labels":{"app":"w"}},
 "spec":{"replicas":3,"image":"registry.example.com/app:1.2.3","owner":"ops@example.com","id":"123e4567-e89b-12d3-a456-426614174000",
  "schedule":"2024-01-02T10:00:00Z","labels":{"tier":"web","team":"a"},"args":["--port=8080","--verbose"],"tags":["a","b","c"],
  "ports":[{"name":"http","port":8080},{"name":"https","port":8443,"protocol":"TCP"}],
  "resources":{"cpu":"500m","memory":"256Mi"},"unknownA":1,
  "template":{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"c","image":"x"}]}}},
 "status":{"ready":2,"conditions":[{"type":"Ready","status":"True"}]},"unknownB":{"x":1}}`

// BenchmarkPruneDefaultValidate is one write of a typical custom resource
// through the schema: decode, prune, default and validate.
func BenchmarkPruneDefaultValidate(b *testing.B) {
	s := mustSchema(b, benchSchema)
	data := []byte(benchCR)
	b.ReportAllocs()
	for b.Loop() {
		v, err := DecodeJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		if pruned := Prune(s, v, true); len(pruned) != 2 {
			b.Fatalf("pruned %q", pruned)
		}
		Default(s, v)
		if errs := Validate(s, v); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkValidate is the validation alone, on an already decoded value.
func BenchmarkValidate(b *testing.B) {
	s := mustSchema(b, benchSchema)
	v := mustDecode(b, benchCR)
	Prune(s, v, true)
	Default(s, v)
	b.ReportAllocs()
	for b.Loop() {
		if errs := Validate(s, v); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
