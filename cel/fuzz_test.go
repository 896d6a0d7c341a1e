package cel

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/internal/celfuzz"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// FuzzCompile compiles arbitrary rule text against a schema: compilation
// never panics, a rule that compiles cleanly has a bounded estimate, and
// evaluating it stays within the per-call limit.
//
// go test ./cel -run XXX -fuzz FuzzCompile -fuzztime 1m
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"self.replicas <= self.maxReplicas",
		"self.names.all(n, n.startsWith('a'))",
		"self.names.all(a, self.names.all(b, a == b))",
		"has(self.labels) && self.labels.exists(k, k == 'x')",
		"quantity(self.memory).isLessThan(quantity('1Gi'))",
		"isCIDR(self.cidr) && cidr(self.cidr).containsIP('10.0.0.1')",
		"self.names.map(n, n + n).filter(n, n.size() > 3).size() > 0",
		"self.replicas >= oldSelf.replicas",
		"oldSelf.?replicas.orValue(0) <= self.replicas",
		"url(self.cidr).getHost() == ''",
		"self.memory.matches('^[0-9]+$')",
		"[1,2,3].sum() == 6 && 'a'.find('a') == 'a'",
		"semver(self.version).major() > 0",
		"format.named('uuid').value().validate(self.memory).hasValue()",
		"self.labels.all(k, v, k.size() < v.size())",
		"self.x.y.z",
		"((((",
		"",
	} {
		f.Add(seed)
	}
	bounded := func(s *schema.Schema, n int64) *schema.Schema { s.MaxLength = &n; return s }
	f.Fuzz(func(t *testing.T, rule string) {
		s := obj(
			prop("replicas", intS()), prop("maxReplicas", intS()),
			prop("names", &schema.Schema{Type: "array", MaxItems: i64(8), Items: bounded(&schema.Schema{Type: "string"}, 16)}),
			prop("labels", &schema.Schema{Type: "object", MaxProperties: i64(8), AdditionalProperties: bounded(&schema.Schema{Type: "string"}, 16)}),
			prop("memory", bounded(&schema.Schema{Type: "string"}, 16)),
			prop("cidr", bounded(&schema.Schema{Type: "string"}, 43)),
			prop("version", bounded(&schema.Schema{Type: "string"}, 16)),
		)
		s.Validations = []schema.ValidationRule{{Rule: rule, Message: "failed"}}
		v, errs := CompileSchema(s, crdPath)
		if len(errs) > 0 || v == nil {
			return
		}
		o := map[string]any{
			"replicas": int64(2), "maxReplicas": int64(3), "names": []any{"a", "ab", "abc"},
			"labels": map[string]any{"x": "1", "yy": "22"}, "memory": "512Mi", "cidr": "10.0.0.0/8", "version": "1.2.3",
		}
		res := v.Validate(context.Background(), nil, o, o)
		if spent := RuntimeCELCostBudget - res.RemainingBudget; res.RemainingBudget >= 0 && spent > PerCallLimit {
			t.Fatalf("rule %q cost %d, over the per-call limit", rule, spent)
		}
	})
}

// FuzzEvaluate validates arbitrary JSON against Gateway-style rules: no
// panic, and the budget spent never exceeds the budget given.
//
// go test ./cel -run XXX -fuzz FuzzEvaluate -fuzztime 1m
func FuzzEvaluate(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"gatewayClassName":"a","listeners":[{"name":"x","port":1,"protocol":"HTTPS"}]}}`,
		`{"spec":{"listeners":[{"name":"x"},{"name":"x"}],"memory":"1e3","allowedCIDR":"::/0"}}`,
		`{"spec":{"addresses":[{"type":"IPAddress","value":"::ffff:1.2.3.4"}],"minReplicas":1.5}}`,
		`{"spec":{"listeners":"not a list","memory":7}}`,
		`{"spec":null}`,
		`[]`,
	} {
		f.Add([]byte(seed), []byte(`{"spec":{"gatewayClassName":"a"}}`))
	}
	v, errs := CompileSchema(gatewaySchema(), crdPath)
	if len(errs) > 0 {
		f.Fatal(errs)
	}
	f.Fuzz(func(t *testing.T, newJSON, oldJSON []byte) {
		o, err := structural.DecodeJSON(newJSON)
		if err != nil {
			return
		}
		old, _ := structural.DecodeJSON(oldJSON)
		const budget = RuntimeCELCostBudget / 10
		res := v.ValidateWithBudget(context.Background(), nil, o, old, budget)
		if res.RemainingBudget > budget {
			t.Fatalf("remaining budget %d grew", res.RemainingBudget)
		}
	})
}

// ratchetFuzzSchema has a rule on every kind of node ratcheting pairs
// differently: the root, an object, allOf, a map list's items, a set's,
// a plain list's, an atomic map's field, map values, and an object
// keeping unknown fields. None uses oldSelf, so an update evaluates the
// same rules as a create.
const ratchetFuzzSchema = `{"type":"object","x-kubernetes-validations":[{"rule":"!has(self.spec) || !has(self.spec.n) || self.spec.n < 9","message":"root"}],
 "properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"!has(self.n) || self.n < 5"}],"properties":{
  "n":{"type":"integer","allOf":[{"x-kubernetes-validations":[{"rule":"self < 7","message":"allOf"}]}]},
  "m":{"type":"array","maxItems":8,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object",
    "properties":{"k":{"type":"string","maxLength":4},"v":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"!has(self.v) || self.v < 5"}]}},
  "s":{"type":"array","maxItems":8,"x-kubernetes-list-type":"set","items":{"type":"string","maxLength":4,"x-kubernetes-validations":[{"rule":"self.size() < 2"}]}},
  "a":{"type":"array","maxItems":8,"items":{"type":"integer","x-kubernetes-validations":[{"rule":"self < 5"}]}},
  "am":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"x":{"type":"integer","x-kubernetes-validations":[{"rule":"self < 5"}]},"y":{"type":"integer"}}},
  "ap":{"type":"object","maxProperties":8,"additionalProperties":{"type":"integer","x-kubernetes-validations":[{"rule":"self < 5"}]}},
  "u":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"x":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"!has(self.x) || self.x < 5"}]}}}}}`

// FuzzValidateRatcheting validates updates of objects whose values the
// old object shares in part: ratcheting only turns errors into warnings,
// so the errors and warnings of an update are, together, exactly the
// errors of creating the same object (no rule here uses oldSelf), and an
// update from an identical copy has no error unless a field the schema
// does not declare makes it changed. Old and new come out unmodified.
//
// go test ./cel -run XXX -fuzz FuzzValidateRatcheting -fuzztime 1m
func FuzzValidateRatcheting(f *testing.F) {
	for _, seed := range []string{"", "\x01\x01\x07\x02", "\x03\x05\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
		strings.Repeat("\x07\x03\x02", 20), strings.Repeat("\xff\x05\x01\x09", 20)} {
		f.Add([]byte(seed))
	}
	s, err := schema.FromOpenAPIV3([]byte(ratchetFuzzSchema))
	if err != nil {
		f.Fatal(err)
	}
	v, errs := CompileSchema(s, crdPath)
	if len(errs) > 0 {
		f.Fatal(errs)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, old := celfuzz.RatchetPair(data)
		objCopy, oldCopy := celfuzz.DeepCopyJSON(obj), celfuzz.DeepCopyJSON(old)
		create := messages(v.Validate(context.Background(), nil, obj, nil).Errors)
		update := v.Validate(context.Background(), nil, obj, old)
		both := append(messages(update.Errors), update.Warnings...)
		slices.Sort(create)
		slices.Sort(both)
		if !slices.Equal(create, both) {
			t.Fatalf("create's errors:\n%s\nan update's errors and warnings:\n%s\nobj %v\nold %v",
				strings.Join(create, "\n"), strings.Join(both, "\n"), obj, old)
		}
		// A field the schema does not declare makes its object, and
		// every object above it, changed.
		u, _ := obj["spec"].(map[string]any)["u"].(map[string]any)
		if _, unknown := u["extra"]; !unknown {
			if same := v.Validate(context.Background(), nil, obj, celfuzz.DeepCopyJSON(obj)); len(same.Errors) > 0 {
				t.Fatalf("an update from an identical copy reports %s\nobj %v", same.Errors, obj)
			}
		}
		if !reflect.DeepEqual(obj, objCopy) || !reflect.DeepEqual(old, oldCopy) {
			t.Fatalf("validation modified its input")
		}
	})
}
