package structuraldiff

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// kubeSchema reads a v1 openAPIV3Schema as kube-apiserver does: into the
// internal JSONSchemaProps, then the structural schema (nil when it is not
// structural).
func kubeSchema(t *testing.T, js string) (*apiextensions.JSONSchemaProps, *structuralschema.Structural) {
	t.Helper()
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(js), &v1); err != nil {
		t.Fatalf("decoding schema %s: %v", js, err)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, internal, nil); err != nil {
		t.Fatalf("converting schema %s: %v", js, err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return internal, nil
	}
	return internal, ss
}

// kubeValidate is what kube-apiserver's custom resource strategy reports
// for obj besides metadata, scale and CEL: the OpenAPI schema, embedded
// resources, list types.
func kubeValidate(t *testing.T, internal *apiextensions.JSONSchemaProps, ss *structuralschema.Structural, obj any) []string {
	t.Helper()
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatalf("NewSchemaValidator: %v", err)
	}
	errs := apiservervalidation.ValidateCustomResource(nil, obj, validator)
	errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, obj, ss, false)...)
	if m, ok := obj.(map[string]any); ok {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ss, m)...)
	}
	return messages(errs)
}

// kubePrune prunes obj as kube-apiserver's decoding does (pruning, null
// pruning, then the embedded resources' metadata coercion), and returns
// the unknown field paths it reports.
func kubePrune(t *testing.T, ss *structuralschema.Structural, obj any, root bool) []string {
	t.Helper()
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	pruned := structuralpruning.PruneWithOptions(obj, ss, root, opts)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, ss)
	if ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, obj, ss, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); ferr == nil {
		pruned = append(pruned, paths...)
	}
	sort.Strings(pruned)
	return pruned
}

func kubeDefault(ss *structuralschema.Structural, obj any) {
	structuraldefaulting.Default(obj, ss)
}

// kubeCheckSchema is what kube-apiserver reports about a CRD whose only
// version has the schema js, under that schema's path.
func kubeCheckSchema(t *testing.T, js string) []string {
	t.Helper()
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(js), &v1); err != nil {
		t.Fatalf("decoding schema %s: %v", js, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &v1},
			}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}},
	}
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		t.Fatalf("converting CRD: %v", err)
	}
	var errs field.ErrorList
	for _, e := range crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal) {
		errs = append(errs, e)
	}
	return messages(errs)
}

func messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// copyJSON deep-copies a decoded JSON value.
func copyJSON(v any) any { return runtime.DeepCopyJSONValue(v) }
