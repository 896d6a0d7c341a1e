package celdiff

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	kubecel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/warning"

	"github.com/apikit-dev/apikit/cel"
)

// ratchetFuzzSchema has a rule at every kind of node kube's ratcheting
// pairs differently (the root, objects, a map list's items, a set's, a
// plain list's, an atomic map's fields, map values, an object keeping
// unknown fields) and transition rules where oldSelf is bound (objects,
// map-list items, an atomic map's field; optionalOldSelf with a
// messageExpression).
const ratchetFuzzSchema = `{"type":"object","x-kubernetes-validations":[{"rule":"!has(self.spec) || !has(self.spec.n) || self.spec.n < 9","message":"root"}],
 "properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"!has(self.n) || self.n < 5"},
   {"rule":"!has(self.n) || !has(oldSelf.n) || self.n >= oldSelf.n","message":"n may not shrink"},
   {"rule":"!oldSelf.hasValue() || !has(self.a) || !has(oldSelf.value().a) || size(self.a) >= size(oldSelf.value().a)","optionalOldSelf":true,
    "messageExpression":"oldSelf.hasValue() ? 'a may not shrink' : 'new'"}],"properties":{
  "n":{"type":"integer"},
  "m":{"type":"array","maxItems":8,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["k"],"items":{"type":"object",
    "properties":{"k":{"type":"string","maxLength":4},"v":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"!has(self.v) || self.v < 5"},
    {"rule":"!has(self.v) || !has(oldSelf.v) || self.v != oldSelf.v + 1","message":"no single steps"}]}},
  "s":{"type":"array","maxItems":8,"x-kubernetes-list-type":"set","items":{"type":"string","maxLength":4,"x-kubernetes-validations":[{"rule":"self.size() < 2"}]}},
  "a":{"type":"array","maxItems":8,"items":{"type":"integer","x-kubernetes-validations":[{"rule":"self < 5"}]}},
  "am":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"x":{"type":"integer","x-kubernetes-validations":[{"rule":"self < 5"}]},
    "y":{"type":"integer","x-kubernetes-validations":[{"rule":"self >= oldSelf","message":"y may not shrink"}]}}},
  "ap":{"type":"object","maxProperties":8,"additionalProperties":{"type":"integer","x-kubernetes-validations":[{"rule":"self < 5"}]}},
  "u":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"x":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"!has(self.x) || self.x < 5"}]}}}}}`

// ratchetPair makes, from the fuzzer's bytes, an object of
// ratchetFuzzSchema and an old version sharing most of its values (two
// random documents would rarely share any).
func ratchetPair(data []byte) (obj, old map[string]any) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	keys := []string{"a", "b", "c"}
	value := func(field string) any {
		n := next()
		switch field {
		case "n":
			return int64(n % 10)
		case "m":
			l := []any{}
			for i := range n % 4 {
				item := map[string]any{"k": keys[(n/4+i)%3]}
				if v := next(); v%3 != 0 {
					item["v"] = int64(v % 8)
				}
				l = append(l, item)
			}
			return l
		case "s":
			l := []any{}
			for i := range n % 4 {
				l = append(l, strings.Repeat("x", i+1))
			}
			return l
		case "a":
			l := []any{}
			for range n % 4 {
				l = append(l, int64(next()%8))
			}
			return l
		case "am":
			return map[string]any{"x": int64(n % 8), "y": int64(next() % 3)}
		case "ap":
			m := map[string]any{}
			for i := range n % 4 {
				m[keys[i%3]] = int64(next() % 8)
			}
			return m
		default: // u
			m := map[string]any{"x": int64(n % 8)}
			if n%2 == 0 {
				m["extra"] = "kept"
			}
			return m
		}
	}
	spec, oldSpec := map[string]any{}, map[string]any{}
	for _, f := range []string{"n", "m", "s", "a", "am", "ap", "u"} {
		if next()%4 == 0 {
			continue
		}
		v := value(f)
		spec[f] = v
		switch next() % 4 {
		case 0: // the old object lacks the field
		case 1:
			oldSpec[f] = value(f)
		default:
			oldSpec[f] = copyJSON(v)
		}
	}
	return map[string]any{"spec": spec}, map[string]any{"spec": oldSpec}
}

func copyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = copyJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = copyJSON(e)
		}
		return l
	}
	return v
}

// FuzzRatchetingMatchesKube validates the same updates with apikit and
// kube-apiserver's validator (k8s.io/apiextensions-apiserver v0.37.0,
// ratcheting on): errors and warnings must be the same.
//
// cd e2e && go test ./celdiff -run XXX -fuzz FuzzRatchetingMatchesKube -fuzztime 1m
func FuzzRatchetingMatchesKube(f *testing.F) {
	for _, seed := range []string{"", "\x01\x01\x07\x02", "\x03\x05\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
		strings.Repeat("\x07\x03\x02", 20), strings.Repeat("\xff\x05\x01\x09", 20), strings.Repeat("\x02\x06\x03\x01", 20)} {
		f.Add([]byte(seed))
	}
	// Both engines compile the schema once, at the first input (the
	// helpers report through a *testing.T).
	var (
		once sync.Once
		v    *cel.Validator
		ss   *structuralschema.Structural
		kv   *kubecel.Validator
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		once.Do(func() {
			if errs := kubeCRDErrors(t, ratchetFuzzSchema); len(errs) > 0 {
				t.Fatalf("kube refuses the schema: %v", errs)
			}
			var errs []string
			if v, errs = apikitCompile(t, ratchetFuzzSchema); len(errs) > 0 {
				t.Fatalf("apikit refuses the schema: %v", errs)
			}
			ss = kubeStructural(t, ratchetFuzzSchema)
			kv = kubecel.NewValidator(ss, true, celconfig.PerCallLimit)
		})
		if v == nil || kv == nil {
			t.Skip("the schema did not compile")
		}
		obj, old := ratchetPair(data)
		for _, o := range []map[string]any{nil, old, copyJSON(obj).(map[string]any)} {
			var w warnings
			ctx := warning.WithWarningRecorder(context.Background(), &w)
			var opts []kubecel.Option
			var oldObj any
			if o != nil {
				oldObj = o
				opts = append(opts, kubecel.WithRatcheting(common.NewCorrelatedObject(obj, o, &model.Structural{Structural: ss})))
			}
			kerrs, _ := kv.Validate(ctx, nil, ss, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
			wantErrs := fieldMessages(kerrs)
			sort.Strings(w)
			gotErrs, gotWarns := apikitValidateWarn(v, obj, o)
			if !reflect.DeepEqual(gotErrs, wantErrs) || !reflect.DeepEqual(gotWarns, []string(w)) {
				t.Fatalf("obj %v\nold %v\napikit errors:   %q\n  kube errors:   %q\napikit warnings: %q\n  kube warnings: %q",
					obj, o, gotErrs, wantErrs, gotWarns, []string(w))
			}
		}
	})
}
