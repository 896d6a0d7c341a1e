package celdiff

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	kubecel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"

	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// crdPath is where kube-apiserver reports a CRD's only schema.
var crdPath = meta.NewPath("spec", "validation", "openAPIV3Schema")

// kubeCRDErrors is what kube-apiserver says of a CRD holding the schema,
// kept to the errors about CEL rules and their cost.
func kubeCRDErrors(t *testing.T, js string) []string {
	t.Helper()
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(js), &v1); err != nil {
		t.Fatalf("decoding schema: %v", err)
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
	var out []string
	for _, e := range crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal) {
		if m := e.Error(); strings.Contains(m, "x-kubernetes-validations") || strings.Contains(m, "estimated") {
			out = append(out, m)
		}
	}
	return out
}

// kubeStructural reads the schema as kube-apiserver's CR strategy holds it.
func kubeStructural(t *testing.T, js string) *structuralschema.Structural {
	t.Helper()
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(js), &v1); err != nil {
		t.Fatal(err)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, internal, nil); err != nil {
		t.Fatal(err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("NewStructural: %v", err)
	}
	return ss
}

// kubeValidate runs the rules as kube-apiserver's custom resource strategy
// does on create (old nil) or update, ratcheting included.
func kubeValidate(ss *structuralschema.Structural, obj, old map[string]any) []string {
	v := kubecel.NewValidator(ss, true, celconfig.PerCallLimit)
	if v == nil {
		return nil
	}
	var opts []kubecel.Option
	var oldObj any
	if old != nil {
		oldObj = old
		opts = append(opts, kubecel.WithRatcheting(common.NewCorrelatedObject(obj, old, &model.Structural{Structural: ss})))
	}
	errs, _ := v.Validate(context.Background(), nil, ss, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return fieldMessages(errs)
}

func fieldMessages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	sort.Strings(out)
	return out
}

func apikitCompile(t *testing.T, js string) (*cel.Validator, []string) {
	t.Helper()
	s, err := schema.FromOpenAPIV3([]byte(js))
	if err != nil {
		t.Fatalf("FromOpenAPIV3: %v", err)
	}
	v, errs := cel.CompileSchema(s, crdPath)
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	sort.Strings(out)
	return v, out
}

func apikitValidate(v *cel.Validator, obj, old map[string]any) []string {
	var oldObj any
	if old != nil {
		oldObj = old
	}
	res := v.Validate(context.Background(), nil, obj, oldObj)
	var out []string
	for _, e := range res.Errors {
		out = append(out, e.Error())
	}
	sort.Strings(out)
	return out
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	v, err := structural.DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return v.(map[string]any)
}

func rules(rs ...string) string { return `"x-kubernetes-validations":[` + strings.Join(rs, ",") + `]` }

func rule(expr string, more ...string) string {
	b, _ := json.Marshal(expr)
	return `{"rule":` + string(b) + strings.Join(more, "") + `}`
}

// TestCELMatchesKube compiles and runs the same rules through both.
func TestCELMatchesKube(t *testing.T) {
	spec := func(r string) string {
		return `{"type":"object","properties":{"spec":{"type":"object",` + r + `,"properties":{
			"replicas":{"type":"integer"},"maxReplicas":{"type":"integer"},
			"name":{"type":"string","maxLength":64},"ratio":{"type":"number"},
			"port":{"x-kubernetes-int-or-string":true},
			"memory":{"type":"string","maxLength":16},"cidr":{"type":"string","maxLength":43},
			"timeout":{"type":"string","format":"duration"},"since":{"type":"string","format":"date-time"},
			"tags":{"type":"array","maxItems":8,"items":{"type":"string","maxLength":16},"x-kubernetes-list-type":"set"},
			"labels":{"type":"object","maxProperties":8,"additionalProperties":{"type":"string","maxLength":16}},
			"items":{"type":"array","maxItems":8,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["key"],
				"items":{"type":"object","required":["key"],"properties":{"key":{"type":"string","maxLength":8},"value":{"type":"integer"}}}},
			"free":{"type":"array","items":{"type":"string"}}
		}}}}`
	}
	tests := []struct {
		name     string
		schema   string
		obj, old string
	}{
		{name: "message", schema: spec(rules(rule("self.replicas <= self.maxReplicas", `,"message":"replicas must be at most maxReplicas"`))),
			obj: `{"spec":{"replicas":5,"maxReplicas":3}}`},
		{name: "rule as message", schema: spec(rules(rule("self.replicas <= self.maxReplicas"))),
			obj: `{"spec":{"replicas":5,"maxReplicas":3}}`},
		{name: "messageExpression", schema: spec(rules(rule("self.replicas <= self.maxReplicas", `,"messageExpression":"self.name + ' has too many'"`))),
			obj: `{"spec":{"replicas":5,"maxReplicas":3,"name":"web"}}`},
		{name: "reason and fieldPath", schema: spec(rules(rule("has(self.name)", `,"message":"name please","reason":"FieldValueRequired","fieldPath":".name"`))),
			obj: `{"spec":{}}`},
		{name: "a scalar's value is shown", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"replicas":{"type":"integer",` + rules(rule("self < 10")) + `},
			"name":{"type":"string","maxLength":8,` + rules(rule("self.startsWith('a')", `,"reason":"FieldValueForbidden"`)) + `},
			"tags":{"type":"array","maxItems":4,"items":{"type":"string","maxLength":4},` + rules(rule("size(self) < 2", `,"reason":"FieldValueDuplicate"`)) + `}}}}}`,
			obj: `{"spec":{"replicas":11,"name":"bob","tags":["a","b"]}}`},
		{name: "no such key", schema: spec(rules(rule("self.replicas > 0"))), obj: `{"spec":{}}`},
		{name: "int-or-string", schema: spec(rules(rule("self.port > 0"))), obj: `{"spec":{"port":"http"}}`},
		{name: "number", schema: spec(rules(rule("self.ratio < 0.5"))), obj: `{"spec":{"ratio":1}}`},
		{name: "duration and timestamp", schema: spec(rules(rule("self.timeout < duration('1h') && self.since < timestamp('2020-01-01T00:00:00Z')"))),
			obj: `{"spec":{"timeout":"2h","since":"2021-01-01T00:00:00Z"}}`},
		{name: "transition", schema: spec(rules(rule("self.replicas >= oldSelf.replicas", `,"message":"no shrinking"`))),
			obj: `{"spec":{"replicas":1}}`, old: `{"spec":{"replicas":2}}`},
		{name: "transition on create", schema: spec(rules(rule("self.replicas >= oldSelf.replicas"))), obj: `{"spec":{"replicas":1}}`},
		{name: "optionalOldSelf", schema: spec(rules(rule("oldSelf.hasValue() || self.replicas == 0", `,"optionalOldSelf":true,"message":"start at 0"`))),
			obj: `{"spec":{"replicas":1}}`},
		{name: "ratcheting", schema: spec(rules(rule("self.replicas <= self.maxReplicas"))),
			obj: `{"spec":{"replicas":5,"maxReplicas":3}}`, old: `{"spec":{"replicas":5,"maxReplicas":3}}`},
		{name: "sets and map lists", schema: spec(rules(rule("self.tags == ['b', 'a'] && size(self.tags + ['a', 'c']) == 3", `,"message":"sets"`))),
			obj: `{"spec":{"tags":["a","b"]}}`},
		{name: "map list transition", schema: spec(rules(rule("self.items.all(i, !oldSelf.items.exists(o, o.key == i.key) || oldSelf.items.exists(o, o.key == i.key && o.value <= i.value))", `,"message":"values only grow"`))),
			obj: `{"spec":{"items":[{"key":"a","value":1},{"key":"b","value":1}]}}`, old: `{"spec":{"items":[{"key":"b","value":2},{"key":"a","value":1}]}}`},
		{name: "library functions", schema: spec(rules(
			rule("quantity(self.memory).isLessThan(quantity('1Gi'))", `,"message":"memory"`),
			rule("cidr(self.cidr).containsIP('10.0.0.1')", `,"message":"cidr"`),
			rule("!format.dns1123Label().validate(self.name).hasValue()", `,"message":"label"`),
			rule("self.labels.all(k, v, k.size() <= v.size())", `,"message":"labels"`),
			rule("self.name.find('[0-9]+') == '42'", `,"message":"find"`),
			rule("url('https://' + self.name).getHost() == self.name", `,"message":"url"`),
			rule("semver('1.2.3').isLessThan(semver('1.10.0'))", `,"message":"semver"`))),
			obj: `{"spec":{"memory":"2Gi","cidr":"192.168.0.0/16","name":"Not_A_Label","labels":{"long-key":"v"}}}`},
		{name: "root metadata", schema: `{"type":"object",` + rules(rule("self.metadata.name.startsWith('x-')", `,"message":"x- names only"`)) + `,"properties":{"spec":{"type":"object"}}}`,
			obj: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"y"},"spec":{}}`},
		{name: "escaped property names", schema: `{"type":"object","properties":{"spec":{"type":"object",` +
			rules(rule("self.__namespace__ == 'a' && self.foo__dash__bar == 'b' && self.a__dot__b == 'c' && self.x__underscores__y == 'd'", `,"message":"escaped"`)) +
			`,"properties":{"namespace":{"type":"string"},"foo-bar":{"type":"string"},"a.b":{"type":"string"},"x__y":{"type":"string"},"1abc":{"type":"string"}}}}}`,
			obj: `{"spec":{"namespace":"a","foo-bar":"b","a.b":"c","x__y":"x","1abc":"z"}}`},
		{name: "rules on items and map values", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"ports":{"type":"array","maxItems":4,"items":{"type":"object","properties":{"port":{"type":"integer"}},` + rules(rule("self.port > 1024", `,"message":"high ports"`)) + `}},
			"limits":{"type":"object","maxProperties":4,"additionalProperties":{"type":"integer",` + rules(rule("self <= 10")) + `}}}}}}`,
			obj: `{"spec":{"ports":[{"port":80},{"port":8080},{"port":443}],"limits":{"cpu":20,"mem":5}}}`},
		{name: "transition rules in map values", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"limits":{"type":"object","maxProperties":4,"additionalProperties":{"type":"integer",` + rules(rule("self >= oldSelf", `,"message":"no lowering"`)) + `}}}}}}`,
			obj: `{"spec":{"limits":{"cpu":1,"mem":5,"new":1}}}`, old: `{"spec":{"limits":{"cpu":2,"mem":5}}}`},
		{name: "embedded resource", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,` +
			rules(rule("self.kind == 'Pod' && self.metadata.name.size() > 0", `,"message":"pods only"`)) + `}}}}}`,
			obj: `{"spec":{"template":{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"}}}}`},
		{name: "runtime budget", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"l":{"type":"array","maxItems":1000,"items":{"type":"string","maxLength":6000},` + rules(rule("self.all(x, x.lowerAscii() == x)")) + `}}}}}`,
			obj: `{"spec":{"l":[` + strings.TrimSuffix(strings.Repeat(`"`+strings.Repeat("a", 6000)+`",`, 1000), ",") + `]}}`},
		{name: "int-or-string typing", schema: spec(rules(rule("self.port + 1 > 0"), rule("type(self.port) == string ? self.port.startsWith('h') : self.port > 0", `,"message":"port"`))),
			obj: `{"spec":{"port":"x"}}`},
		{name: "preserve-unknown-fields object", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string"}},` +
			rules(rule("self.a == 'x'", `,"message":"a"`), rule("has(self.b)")) + `}}}`,
			obj: `{"spec":{"a":"y","b":1}}`},
		{name: "compile errors", schema: spec(rules(rule("self.replicas == true"), rule("self.nope > 1"), rule("self.replicas"))), obj: `{"spec":{}}`},
		{name: "messageExpression errors", schema: spec(rules(rule("true", `,"messageExpression":"self.replicas"`))), obj: `{"spec":{}}`},
		{name: "unbounded cost", schema: spec(rules(rule("self.free.all(a, self.free.all(b, a == b))"))), obj: `{"spec":{}}`},
		{name: "bounded cost", schema: spec(rules(rule("self.tags.all(a, self.tags.all(b, a == b))"))), obj: `{"spec":{"tags":["a","b"]}}`},
		{name: "fieldPath invalid", schema: spec(rules(rule("true", `,"fieldPath":".nope"`))), obj: `{"spec":{}}`},
		{name: "optionalOldSelf without oldSelf", schema: spec(rules(rule("true", `,"optionalOldSelf":true`))), obj: `{"spec":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kubeCompile := kubeCRDErrors(t, tc.schema)
			sort.Strings(kubeCompile)
			v, apikitCompileErrs := apikitCompile(t, tc.schema)
			if !reflect.DeepEqual(apikitCompileErrs, kubeCompile) {
				t.Errorf("CRD errors differ\napikit: %s\n  kube: %s", strings.Join(apikitCompileErrs, "\n        "), strings.Join(kubeCompile, "\n        "))
			}
			if len(kubeCompile) > 0 {
				return
			}
			obj, old := decode(t, tc.obj), decode(t, tc.old)
			want := kubeValidate(kubeStructural(t, tc.schema), obj, old)
			got := apikitValidate(v, obj, old)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("validation differs\napikit: %s\n  kube: %s", strings.Join(got, "\n        "), strings.Join(want, "\n        "))
			}
		})
	}
}
