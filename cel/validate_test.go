package cel

import (
	"context"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

func i64(v int64) *int64 { return &v }
func ptrTrue() *bool     { b := true; return &b }

func obj(props ...schema.Property) *schema.Schema {
	return &schema.Schema{Type: "object", Properties: props}
}

func prop(name string, s *schema.Schema) schema.Property {
	return schema.Property{Name: name, Schema: s}
}

func str() *schema.Schema  { return &schema.Schema{Type: "string", MaxLength: i64(64)} }
func intS() *schema.Schema { return &schema.Schema{Type: "integer"} }

func withRules(s *schema.Schema, rules ...schema.ValidationRule) *schema.Schema {
	s.Validations = rules
	return s
}

var crdPath = meta.NewPath("spec", "validation", "openAPIV3Schema")

func compile(t *testing.T, s *schema.Schema) *Validator {
	t.Helper()
	v, errs := CompileSchema(s, crdPath)
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}
	return v
}

func messages(errs meta.FieldErrors) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestValidateMessages(t *testing.T) {
	spec := func(rules ...schema.ValidationRule) *schema.Schema {
		return obj(prop("spec", withRules(obj(
			prop("replicas", intS()),
			prop("maxReplicas", intS()),
			prop("name", str()),
			prop("ratio", &schema.Schema{Type: "number"}),
			prop("port", &schema.Schema{IntOrString: true}),
		), rules...)))
	}
	tests := []struct {
		name     string
		schema   *schema.Schema
		obj, old map[string]any
		want     []string
		warnings int
	}{{
		name:   "message",
		schema: spec(schema.ValidationRule{Rule: "self.replicas <= self.maxReplicas", Message: "replicas must be at most maxReplicas"}),
		obj:    map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3)}},
		want:   []string{`spec: Invalid value: replicas must be at most maxReplicas`},
	}, {
		name:   "rule as message",
		schema: spec(schema.ValidationRule{Rule: "self.replicas <= self.maxReplicas"}),
		obj:    map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3)}},
		want:   []string{`spec: Invalid value: failed rule: self.replicas <= self.maxReplicas`},
	}, {
		name:   "passes",
		schema: spec(schema.ValidationRule{Rule: "self.replicas <= self.maxReplicas"}),
		obj:    map[string]any{"spec": map[string]any{"replicas": int64(1), "maxReplicas": int64(3)}},
	}, {
		name: "messageExpression",
		schema: spec(schema.ValidationRule{Rule: "self.replicas <= self.maxReplicas",
			MessageExpression: "self.name + ' has too many replicas'"}),
		obj:  map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3), "name": "web"}},
		want: []string{`spec: Invalid value: web has too many replicas`},
	}, {
		name: "messageExpression failing falls back to the message",
		schema: spec(schema.ValidationRule{Rule: "self.replicas <= self.maxReplicas", Message: "too many",
			MessageExpression: "self.name + ' has too many replicas'"}),
		obj:  map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3)}},
		want: []string{`spec: Invalid value: too many`},
	}, {
		name:   "reason and fieldPath",
		schema: spec(schema.ValidationRule{Rule: "has(self.name)", Message: "name is required", Reason: "FieldValueRequired", FieldPath: ".name"}),
		obj:    map[string]any{"spec": map[string]any{}},
		want:   []string{`spec.name: Required value: name is required`},
	}, {
		name:   "forbidden",
		schema: spec(schema.ValidationRule{Rule: "!has(self.ratio)", Message: "ratio is not allowed", Reason: "FieldValueForbidden"}),
		obj:    map[string]any{"spec": map[string]any{"ratio": int64(1)}},
		want:   []string{`spec: Forbidden: ratio is not allowed`},
	}, {
		name:   "duplicate",
		schema: spec(schema.ValidationRule{Rule: "false", Reason: "FieldValueDuplicate"}),
		obj:    map[string]any{"spec": map[string]any{}},
		want:   []string{`spec: Duplicate value`},
	}, {
		name:   "evaluation error",
		schema: spec(schema.ValidationRule{Rule: "self.replicas > 0"}),
		obj:    map[string]any{"spec": map[string]any{}},
		want:   []string{`spec: Invalid value: "object": no such key: replicas evaluating rule: self.replicas > 0`},
	}, {
		name:   "int-or-string checked at run time",
		schema: spec(schema.ValidationRule{Rule: "self.port > 0"}),
		obj:    map[string]any{"spec": map[string]any{"port": "http"}},
		want:   []string{`spec: Invalid value: "object": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.port > 0`},
	}, {
		name:   "number from an integral JSON value",
		schema: spec(schema.ValidationRule{Rule: "self.ratio < 0.5"}),
		obj:    map[string]any{"spec": map[string]any{"ratio": int64(1)}},
		want:   []string{`spec: Invalid value: failed rule: self.ratio < 0.5`},
	}, {
		name:   "transition rule",
		schema: spec(schema.ValidationRule{Rule: "self.replicas >= oldSelf.replicas", Message: "replicas may not shrink"}),
		obj:    map[string]any{"spec": map[string]any{"replicas": int64(1)}},
		old:    map[string]any{"spec": map[string]any{"replicas": int64(2)}},
		want:   []string{`spec: Invalid value: replicas may not shrink`},
	}, {
		name:   "transition rule skipped on create",
		schema: spec(schema.ValidationRule{Rule: "self.replicas >= oldSelf.replicas"}),
		obj:    map[string]any{"spec": map[string]any{"replicas": int64(1)}},
	}, {
		name:   "optionalOldSelf runs on create",
		schema: spec(schema.ValidationRule{Rule: "oldSelf.hasValue() || self.replicas == 0", Message: "start at zero", OptionalOldSelf: ptrTrue()}),
		obj:    map[string]any{"spec": map[string]any{"replicas": int64(1)}},
		want:   []string{`spec: Invalid value: start at zero`},
	}, {
		name:   "find and findAll with constant patterns, compiled once",
		schema: spec(schema.ValidationRule{Rule: "self.name.find('[0-9]+') == '42' && self.name.findAll('[a-z]', 2) == ['w', 'e']", Message: "bad name"}),
		obj:    map[string]any{"spec": map[string]any{"name": "web7"}},
		want:   []string{`spec: Invalid value: bad name`},
	}, {
		name:   "find passes",
		schema: spec(schema.ValidationRule{Rule: "self.name.find('[0-9]+') == '42' && self.name.findAll('[a-z]', 2) == ['w', 'e']"}),
		obj:    map[string]any{"spec": map[string]any{"name": "web42"}},
	}, {
		// kube evaluates a messageExpression with oldSelf bound as a plain
		// value, even an optionalOldSelf rule's: hasValue() fails on it
		// and the message falls back (e2e/celdiff holds this to kube's).
		name: "messageExpression of an optionalOldSelf rule",
		schema: spec(schema.ValidationRule{Rule: "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas", OptionalOldSelf: ptrTrue(),
			MessageExpression: "oldSelf.hasValue() ? 'replicas may not shrink' : 'unreachable'"}),
		obj:  map[string]any{"spec": map[string]any{"replicas": int64(1)}},
		old:  map[string]any{"spec": map[string]any{"replicas": int64(2)}},
		want: []string{`spec: Invalid value: failed rule: !oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas`},
	}, {
		name: "messageExpression sees oldSelf only where a rule uses it",
		schema: spec(schema.ValidationRule{Rule: "self.replicas <= self.maxReplicas", Message: "too many",
			MessageExpression: "oldSelf.replicas > 3 ? 'was over 3' : 'was at most 3'"}),
		obj:  map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3)}},
		old:  map[string]any{"spec": map[string]any{"replicas": int64(4), "maxReplicas": int64(3)}},
		want: []string{`spec: Invalid value: too many`},
	}, {
		name:     "ratcheting: an unchanged value warns",
		schema:   spec(schema.ValidationRule{Rule: "self.replicas <= self.maxReplicas"}),
		obj:      map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3)}},
		old:      map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3)}},
		warnings: 1,
	}, {
		name:   "root sees apiVersion, kind and metadata.name",
		schema: withRules(obj(prop("spec", obj())), schema.ValidationRule{Rule: "self.metadata.name.startsWith('x-')", Message: "name must start with x-"}),
		obj:    map[string]any{"apiVersion": "a/v1", "kind": "K", "metadata": map[string]any{"name": "y"}},
		want:   []string{`<nil>: Invalid value: name must start with x-`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := compile(t, tc.schema)
			var old any
			if tc.old != nil {
				old = tc.old
			}
			res := v.Validate(context.Background(), nil, tc.obj, old)
			got := messages(res.Errors)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(res.Warnings) != tc.warnings {
				t.Fatalf("warnings %v, want %d", res.Warnings, tc.warnings)
			}
		})
	}
}

func TestListTypes(t *testing.T) {
	item := obj(prop("name", str()), prop("value", intS()))
	s := obj(
		prop("set", &schema.Schema{Type: "array", ListType: schema.ListSet, MaxItems: i64(10), Items: intS()}),
		prop("atomic", &schema.Schema{Type: "array", MaxItems: i64(10), Items: intS()}),
		prop("map", &schema.Schema{Type: "array", ListType: schema.ListMap, ListMapKeys: []string{"name"}, MaxItems: i64(10), Items: item,
			Validations: []schema.ValidationRule{{Rule: "self.all(i, !oldSelf.exists(o, o.name == i.name) || oldSelf.exists(o, o.name == i.name && o.value <= i.value))", Message: "values may only grow"}}}),
	)
	s.Validations = []schema.ValidationRule{
		{Rule: "self.set == [2, 1]", Message: "set equality ignores order"},
		{Rule: "self.atomic != [2, 1]", Message: "atomic equality keeps order"},
		{Rule: "size(self.set + [1, 3]) == 3", Message: "set union adds new elements"},
		{Rule: "size(self.atomic + [1, 3]) == 4", Message: "atomic concatenation appends"},
		{Rule: "self.map == [{'name': 'b', 'value': 2}, {'name': 'a', 'value': 1}].map(x, x)", Message: "unused"},
	}
	// The map-list literal cannot be typed as the schema's object; drop it.
	s.Validations = s.Validations[:4]
	v := compile(t, s)
	o := map[string]any{
		"set":    []any{int64(1), int64(2)},
		"atomic": []any{int64(1), int64(2)},
		"map":    []any{map[string]any{"name": "a", "value": int64(1)}, map[string]any{"name": "b", "value": int64(1)}},
	}
	old := map[string]any{
		"set":    []any{int64(1), int64(2)},
		"atomic": []any{int64(1), int64(2)},
		"map":    []any{map[string]any{"name": "b", "value": int64(2)}, map[string]any{"name": "a", "value": int64(1)}},
	}
	res := v.Validate(context.Background(), nil, o, old)
	want := `map: Invalid value: values may only grow`
	if got := strings.Join(messages(res.Errors), "\n"); got != want {
		t.Fatalf("errors:\n%s\nwant:\n%s", got, want)
	}
}

func TestCompileErrors(t *testing.T) {
	rule := func(r schema.ValidationRule) *schema.Schema { return withRules(obj(prop("x", intS())), r) }
	tests := []struct {
		name   string
		schema *schema.Schema
		want   []string
	}{{
		name:   "type error",
		schema: withRules(obj(prop("spec", withRules(intS(), schema.ValidationRule{Rule: "self == true"})))),
		want: []string{`spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self == true","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'
 | self == true
 | .....^`},
	}, {
		name:   "undefined field",
		schema: rule(schema.ValidationRule{Rule: "self.nonExistingField > 0"}),
		want: []string{`spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.nonExistingField \u003e 0","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'
 | self.nonExistingField > 0
 | ....^`},
	}, {
		name:   "not a bool",
		schema: rule(schema.ValidationRule{Rule: "self.x"}),
		want:   []string{`spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.x","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: cel expression must evaluate to a bool`},
	}, {
		name:   "messageExpression not a string",
		schema: rule(schema.ValidationRule{Rule: "self.x > 0", MessageExpression: "self.x"}),
		want:   []string{`spec.validation.openAPIV3Schema.x-kubernetes-validations[0].messageExpression: Invalid value: {"Rule":"self.x \u003e 0","Message":"","MessageExpression":"self.x","Reason":null,"FieldPath":"","OptionalOldSelf":null}: messageExpression must evaluate to a string`},
	}, {
		name:   "empty rule: CheckStructural's to report",
		schema: rule(schema.ValidationRule{Rule: " "}),
	}, {
		name:   "bad fieldPath",
		schema: rule(schema.ValidationRule{Rule: "true", FieldPath: ".y"}),
		want:   []string{`spec.validation.openAPIV3Schema.x-kubernetes-validations[0].fieldPath: Invalid value: ".y": must be a valid path`},
	}, {
		name:   "optionalOldSelf without oldSelf",
		schema: rule(schema.ValidationRule{Rule: "self.x > 0", OptionalOldSelf: ptrTrue()}),
		want:   []string{`spec.validation.openAPIV3Schema.x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule`},
	}, {
		name: "oldSelf in a set's items",
		schema: obj(prop("l", &schema.Schema{Type: "array", ListType: schema.ListSet, MaxItems: i64(5),
			Items: withRules(intS(), schema.ValidationRule{Rule: "self == oldSelf"})})),
		want: []string{`spec.validation.openAPIV3Schema.properties[l].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[l]`},
	}, {
		name: "rule cost over budget",
		schema: obj(prop("l", withRules(&schema.Schema{Type: "array", Items: &schema.Schema{Type: "string"}},
			schema.ValidationRule{Rule: "self.all(x, self.all(y, x == y))"}))),
		want: []string{
			`spec.validation.openAPIV3Schema.properties[l].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`,
			`spec.validation.openAPIV3Schema.properties[l].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema`,
			`spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`,
		},
	}, {
		name: "bounds bring the cost within budget",
		schema: obj(prop("l", withRules(&schema.Schema{Type: "array", MaxItems: i64(100), Items: &schema.Schema{Type: "string", MaxLength: i64(64)}},
			schema.ValidationRule{Rule: "self.all(x, self.all(y, x == y))"}))),
	}, {
		name: "rule on a field with no type",
		schema: obj(prop("any", withRules(&schema.Schema{Unknown: true},
			schema.ValidationRule{Rule: "true"}))),
		want: []string{`spec.validation.openAPIV3Schema.properties[any].x-kubernetes-validations: Internal error: internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := CompileSchema(tc.schema, crdPath)
			got := strings.Join(messages(errs), "\n")
			if got != strings.Join(tc.want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestRuntimeBudget(t *testing.T) {
	// Strings make each step expensive, so the per-call limit is reached
	// in a thousand steps rather than a million.
	s := obj(prop("l", withRules(&schema.Schema{Type: "array", MaxItems: i64(1000), Items: &schema.Schema{Type: "string", MaxLength: i64(6000)}},
		schema.ValidationRule{Rule: "self.all(x, x.lowerAscii() == x)"})))
	v := compile(t, s)
	l := make([]any, 1000)
	for i := range l {
		l[i] = strings.Repeat("a", 6000)
	}
	res := v.Validate(context.Background(), nil, map[string]any{"l": l}, nil)
	want := `l: Invalid value: "array": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, x.lowerAscii() == x)`
	if got := strings.Join(messages(res.Errors), "\n"); got != want {
		t.Fatalf("errors:\n%s\nwant:\n%s", got, want)
	}
	if res.RemainingBudget >= 0 {
		t.Fatalf("remaining budget %d, want negative", res.RemainingBudget)
	}
	res = v.ValidateWithBudget(context.Background(), nil, map[string]any{"l": []any{int64(1), int64(2)}}, nil, 1)
	want = `l: Invalid value: "array": validation failed due to running out of cost budget, no further validation rules will be run`
	if got := strings.Join(messages(res.Errors), "\n"); got != want {
		t.Fatalf("errors:\n%s\nwant:\n%s", got, want)
	}
}
