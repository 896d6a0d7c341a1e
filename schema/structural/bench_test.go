package structural

import (
	"os"
	"testing"
)

// benchFixture returns the benchmark's resource from testdata, which
// e2e/structuraldiff's comparison with apiextensions-apiserver reads too:
// workload-schema.json is a typical CRD schema (a workload with a
// pod-template-like spec, list maps, int-or-string, formats, patterns and
// defaults, and a status that preserves unknown fields); workload.json a
// custom resource of it with a few defaults missing and two unknown
// fields.
func benchFixture(b *testing.B) (schemaJSON, cr string) {
	b.Helper()
	sch, err := os.ReadFile("testdata/workload-schema.json")
	if err != nil {
		b.Fatal(err)
	}
	obj, err := os.ReadFile("testdata/workload.json")
	if err != nil {
		b.Fatal(err)
	}
	return string(sch), string(obj)
}

// BenchmarkPruneDefaultValidate is one write of a typical custom resource
// through the schema: decode, prune, default and validate.
func BenchmarkPruneDefaultValidate(b *testing.B) {
	schemaJSON, cr := benchFixture(b)
	s := mustSchema(b, schemaJSON)
	data := []byte(cr)
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
	schemaJSON, cr := benchFixture(b)
	s := mustSchema(b, schemaJSON)
	v := mustDecode(b, cr)
	Prune(s, v, true)
	Default(s, v)
	b.ReportAllocs()
	for b.Loop() {
		if errs := Validate(s, v); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
