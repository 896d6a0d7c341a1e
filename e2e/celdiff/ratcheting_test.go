package celdiff

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	kubecel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/warning"

	"github.com/apikit-dev/apikit/cel"
)

// warnings records what kube's validator sends as warnings.
type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

// kubeValidateWarn is kubeValidate that also returns the warnings: kube
// ratchets a failed rule by sending it as a warning.
func kubeValidateWarn(t *testing.T, js string, obj, old map[string]any) (errs, warns []string) {
	t.Helper()
	ss := kubeStructural(t, js)
	v := kubecel.NewValidator(ss, true, celconfig.PerCallLimit)
	if v == nil {
		return nil, nil
	}
	return kubeValidateWith(v, ss, obj, old)
}

// kubeValidateWith is kubeValidateWarn with kube's validator v of ss made.
func kubeValidateWith(v *kubecel.Validator, ss *structuralschema.Structural, obj, old map[string]any) (errs, warns []string) {
	var w warnings
	ctx := warning.WithWarningRecorder(context.Background(), &w)
	var opts []kubecel.Option
	var oldObj any
	if old != nil {
		oldObj = old
		opts = append(opts, kubecel.WithRatcheting(common.NewCorrelatedObject(obj, old, &model.Structural{Structural: ss})))
	}
	ferrs, _ := v.Validate(ctx, nil, ss, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	sort.Strings(w)
	return fieldMessages(ferrs), w
}

func apikitValidateWarn(v *cel.Validator, obj, old map[string]any) (errs, warns []string) {
	var oldObj any
	if old != nil {
		oldObj = old
	}
	res := v.Validate(context.Background(), nil, obj, oldObj)
	for _, e := range res.Errors {
		errs = append(errs, e.Error())
	}
	sort.Strings(errs)
	warns = append(warns, res.Warnings...)
	sort.Strings(warns)
	return errs, warns
}

// ratchetCase is one update validated by both engines.
type ratchetCase struct {
	name     string
	schema   string
	obj, old string
	// inAllOf marks a schema with rules in allOf, which both refuse in a
	// CRD (CheckStructural's "must be empty to be structural"): the
	// validators are compared all the same.
	inAllOf bool
}

// runRatchetCases compiles each schema with both engines and compares the
// errors and the warnings (ratcheted failures) of the update.
func runRatchetCases(t *testing.T, tests []ratchetCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kubeCompile := kubeCRDErrors(t, tc.schema)
			sort.Strings(kubeCompile)
			v, apikitCompileErrs := apikitCompile(t, tc.schema)
			if tc.inAllOf && len(kubeCompile) > 0 {
				kubeCompile = nil
			}
			if !reflect.DeepEqual(apikitCompileErrs, kubeCompile) {
				t.Fatalf("CRD errors differ\napikit: %s\n  kube: %s", strings.Join(apikitCompileErrs, "\n        "), strings.Join(kubeCompile, "\n        "))
			}
			if len(kubeCompile) > 0 {
				t.Fatalf("the case's schema is refused: %s", strings.Join(kubeCompile, "\n"))
			}
			obj, old := decode(t, tc.obj), decode(t, tc.old)
			wantErrs, wantWarns := kubeValidateWarn(t, tc.schema, obj, old)
			gotErrs, gotWarns := apikitValidateWarn(v, obj, old)
			if !reflect.DeepEqual(gotErrs, wantErrs) {
				t.Errorf("errors differ\napikit: %s\n  kube: %s", strings.Join(gotErrs, "\n        "), strings.Join(wantErrs, "\n        "))
			}
			if !reflect.DeepEqual(gotWarns, wantWarns) {
				t.Errorf("warnings differ\napikit: %s\n  kube: %s", strings.Join(gotWarns, "\n        "), strings.Join(wantWarns, "\n        "))
			}
		})
	}
}

// TestRatchetingMatchesKube validates updates whose failing rules sit at
// values the update did or did not change, through every way kube's
// validator correlates a value with its old one (object properties, maps,
// atomic maps, map lists by key, sets, atomic and plain lists, allOf, the
// root), with kube's own validator and CorrelatedObject as the reference.
func TestRatchetingMatchesKube(t *testing.T) {
	fail := func(more ...string) string { return rules(rule("self.v < 10", more...)) }
	item := `{"type":"object","properties":{"k":{"type":"string","maxLength":8},"v":{"type":"integer"}},` + fail() + `}`
	list := func(listType string) string {
		lt := ""
		switch listType {
		case "map":
			lt = `"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],`
		case "":
		default:
			lt = `"x-kubernetes-list-type":"` + listType + `",`
		}
		return `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"l":{"type":"array","maxItems":8,` + lt + `"items":` + item + `},
			"n":{"type":"integer"}}}}}`
	}
	objMap := func(mapType string) string {
		return `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"m":{"type":"object","x-kubernetes-map-type":"` + mapType + `","properties":{
				"a":{"type":"integer",` + rules(rule("self < 10")) + `},
				"b":{"type":"integer",` + rules(rule("self >= oldSelf", `,"message":"b may not shrink"`)) + `},
				"c":{"type":"integer"}}}}}}}`
	}
	const changedN = `{"spec":{"n":2,"l":[{"k":"a","v":20},{"k":"b","v":1}]}}`
	const oldN = `{"spec":{"n":1,"l":[{"k":"a","v":20},{"k":"b","v":1}]}}`
	runRatchetCases(t, []ratchetCase{
		{name: "property unchanged", schema: list("map"), obj: changedN, old: oldN},
		{name: "map list reordered", schema: list("map"),
			obj: `{"spec":{"l":[{"k":"b","v":1},{"k":"a","v":20}]}}`, old: `{"spec":{"l":[{"k":"a","v":20},{"k":"b","v":1}]}}`},
		{name: "map list item added", schema: list("map"),
			obj: `{"spec":{"l":[{"k":"a","v":20},{"k":"c","v":30}]}}`, old: `{"spec":{"l":[{"k":"a","v":20}]}}`},
		{name: "map list item changed", schema: list("map"),
			obj: `{"spec":{"l":[{"k":"a","v":21}]}}`, old: `{"spec":{"l":[{"k":"a","v":20}]}}`},
		{name: "set unchanged", schema: list("set"), obj: changedN, old: oldN},
		{name: "set item added", schema: list("set"),
			obj: `{"spec":{"l":[{"k":"a","v":20},{"k":"c","v":1}]}}`, old: `{"spec":{"l":[{"k":"a","v":20}]}}`},
		{name: "atomic list unchanged", schema: list("atomic"), obj: changedN, old: oldN},
		{name: "plain list unchanged", schema: list(""), obj: changedN, old: oldN},
		{name: "plain list item added", schema: list(""),
			obj: `{"spec":{"l":[{"k":"a","v":20},{"k":"c","v":1}]}}`, old: `{"spec":{"l":[{"k":"a","v":20}]}}`},
		{name: "map list items without keys", schema: list("map"),
			obj: `{"spec":{"l":[{"v":20}]}}`, old: `{"spec":{"l":[{"v":20}]}}`},
		{name: "map list duplicate keys", schema: list("map"),
			obj: `{"spec":{"l":[{"k":"a","v":20},{"k":"a","v":30}]}}`, old: `{"spec":{"l":[{"k":"a","v":20},{"k":"a","v":30}]}}`},
		{name: "granular map", schema: objMap("granular"),
			obj: `{"spec":{"m":{"a":20,"b":1,"c":2}}}`, old: `{"spec":{"m":{"a":20,"b":2,"c":1}}}`},
		{name: "atomic map", schema: objMap("atomic"),
			obj: `{"spec":{"m":{"a":20,"b":1,"c":2}}}`, old: `{"spec":{"m":{"a":20,"b":2,"c":1}}}`},
		{name: "additionalProperties", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"m":{"type":"object","maxProperties":8,"additionalProperties":{"type":"integer",` + rules(rule("self < 10")) + `}}}}}}`,
			obj: `{"spec":{"m":{"a":20,"b":30,"c":40}}}`, old: `{"spec":{"m":{"a":20,"b":31}}}`},
		{name: "items of an unchanged map value", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"m":{"type":"object","maxProperties":8,"additionalProperties":{"type":"array","maxItems":4,"items":{"type":"integer",` + rules(rule("self < 10")) + `}}}}}}}`,
			obj: `{"spec":{"m":{"a":[20],"b":[30,1]}}}`, old: `{"spec":{"m":{"a":[20],"b":[30]}}}`},
		{name: "unknown fields count as changed", schema: `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{
			"a":{"type":"integer"}},` + rules(rule("self.a < 10")) + `}}}`,
			obj: `{"spec":{"a":20,"x":1}}`, old: `{"spec":{"a":20,"x":1}}`},
		{name: "root unchanged", schema: `{"type":"object",` + rules(rule("self.spec.a < 10")) + `,"properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"}}}}}`,
			obj: `{"spec":{"a":20}}`, old: `{"spec":{"a":20}}`},
		{name: "root with undeclared apiVersion", schema: `{"type":"object",` + rules(rule("self.spec.a < 10")) + `,"properties":{"spec":{"type":"object","properties":{"a":{"type":"integer"}}}}}`,
			obj: `{"apiVersion":"example.com/v1","spec":{"a":20}}`, old: `{"apiVersion":"example.com/v1","spec":{"a":20}}`},
		{name: "root apiVersion and kind", schema: `{"type":"object","properties":{
			"apiVersion":{"type":"string",` + rules(rule("self == 'example.com/v2'")) + `},
			"kind":{"type":"string",` + rules(rule("self == 'Other'")) + `},
			"spec":{"type":"object","properties":{"kind":{"type":"string",` + rules(rule("self == 'Other'")) + `}}}}}`,
			obj: `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"kind":"Widget"}}`, old: `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"kind":"Widget"}}`},
		{name: "allOf on an unchanged value under a changed parent", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"a":{"type":"integer","allOf":[{` + rules(rule("self < 10", `,"message":"allOf"`)) + `}],` + rules(rule("self < 5")) + `},
			"n":{"type":"integer"}}}}}`,
			obj: `{"spec":{"a":20,"n":2}}`, old: `{"spec":{"a":20,"n":1}}`, inAllOf: true},
		{name: "allOf under an unchanged parent", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"s":{"type":"object","properties":{"a":{"type":"integer","allOf":[{` + rules(rule("self < 10", `,"message":"allOf"`)) + `}]}}},
			"n":{"type":"integer",` + rules(rule("self >= 0")) + `}}}}}`,
			obj: `{"spec":{"s":{"a":20},"n":2}}`, old: `{"spec":{"s":{"a":20},"n":1}}`, inAllOf: true},
		{name: "transition rule on an unchanged value", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"a":{"type":"integer",` + rules(rule("self > oldSelf", `,"message":"must grow"`)) + `},"n":{"type":"integer"}}}}}`,
			obj: `{"spec":{"a":1,"n":2}}`, old: `{"spec":{"a":1,"n":1}}`},
		{name: "evaluation error on an unchanged value", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"s":{"type":"object","properties":{"a":{"type":"integer"}},` + rules(rule("self.a > 0")) + `},"n":{"type":"integer"}}}}}`,
			obj: `{"spec":{"s":{},"n":2}}`, old: `{"spec":{"s":{},"n":1}}`},
		{name: "messageExpression", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"a":{"type":"integer",` + rules(rule("self < 10", `,"messageExpression":"'a is too big'"`)) + `},"n":{"type":"integer"}}}}}`,
			obj: `{"spec":{"a":20,"n":2}}`, old: `{"spec":{"a":20,"n":1}}`},
		{name: "optionalOldSelf messageExpression on update", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"a":{"type":"integer",` + rules(rule("!oldSelf.hasValue() || self >= oldSelf.value()", `,"optionalOldSelf":true,"messageExpression":"oldSelf.hasValue() ? 'a may not shrink' : 'unreachable'"`)) + `}}}}}`,
			obj: `{"spec":{"a":1}}`, old: `{"spec":{"a":2}}`},
		{name: "int and float are different", schema: `{"type":"object","properties":{"spec":{"type":"object","properties":{
			"r":{"type":"number",` + rules(rule("self < 0.5")) + `},"n":{"type":"integer"}}}}}`,
			obj: `{"spec":{"r":1.0,"n":2}}`, old: `{"spec":{"r":1,"n":1}}`},
	})
}
