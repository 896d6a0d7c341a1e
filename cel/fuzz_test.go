package cel

import (
	"context"
	"testing"

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
