package celdiff

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	kubecel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/internal/celfuzz"
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
		obj, old := celfuzz.RatchetPair(data)
		for _, o := range []map[string]any{nil, old, celfuzz.DeepCopyJSON(obj).(map[string]any)} {
			wantErrs, wantWarns := kubeValidateWith(kv, ss, obj, o)
			gotErrs, gotWarns := apikitValidateWarn(v, obj, o)
			if !reflect.DeepEqual(gotErrs, wantErrs) || !reflect.DeepEqual(gotWarns, wantWarns) {
				t.Fatalf("obj %v\nold %v\napikit errors:   %q\n  kube errors:   %q\napikit warnings: %q\n  kube warnings: %q",
					obj, o, gotErrs, wantErrs, gotWarns, wantWarns)
			}
		}
	})
}
