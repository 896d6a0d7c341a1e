package structuraldiff

import (
	"context"
	"os"
	"testing"

	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"

	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// benchFixture returns schema/structural's benchmark resource (its
// testdata): a workload with list maps and sets, int-or-string, formats,
// a pattern, an embedded resource, defaults and two unknown fields.
func benchFixture(tb testing.TB) (schemaJSON, cr string) {
	tb.Helper()
	const dir = "../../schema/structural/testdata/"
	sch, err := os.ReadFile(dir + "workload-schema.json")
	if err != nil {
		tb.Fatal(err)
	}
	obj, err := os.ReadFile(dir + "workload.json")
	if err != nil {
		tb.Fatal(err)
	}
	return string(sch), string(obj)
}

// BenchmarkApikit is one write through apikit: decode, prune, default,
// validate.
func BenchmarkApikit(b *testing.B) {
	schemaJSON, cr := benchFixture(b)
	s, err := schema.FromOpenAPIV3([]byte(schemaJSON))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(cr)
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
	schemaJSON, cr := benchFixture(b)
	internal, ss := kubeSchema(t, schemaJSON)
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(cr)
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
