package mutatingpolicy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apikit-dev/apikit/admission/registration"
)

// FuzzMutation runs arbitrary mutation expressions of both patch types on
// a write: no panic, and whatever passes leaves an object within the size
// bound. The seed corpus runs with go test; explore with
// go test ./admission/mutatingpolicy -fuzz FuzzMutation.
func FuzzMutation(f *testing.F) {
	for _, seed := range []struct {
		expr  string
		patch bool
	}{
		{`Object{metadata: Object.metadata{labels: {"a": "b"}}}`, false},
		{`Object{spec: Object.spec{ports: [Object.spec.ports{name: "x", port: 1}]}}`, false},
		{`Object{spec: Object.spec{size: "not a number"}}`, false},
		{`Object{spec: Object.spec.size{}}`, false},
		{`Object{kind: "Other"}`, false},
		{`Object{metadata: Object.metadata{labels: {"a": 1}}}`, false},
		{`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b"), value: "c"}]`, true},
		{`[JSONPatch{op: "replace", path: "/spec", value: {"size": [1, 2]}}]`, true},
		{`[JSONPatch{op: "copy", from: "/spec", path: "/spec/x"}, JSONPatch{op: "copy", from: "/spec", path: "/spec/x/y"}]`, true},
		{`[JSONPatch{op: "remove", path: "/apiVersion"}]`, true},
		{`[JSONPatch{op: "bogus", path: ""}]`, true},
		{`variables.nothing`, true},
	} {
		f.Add(seed.expr, seed.patch)
	}
	f.Fuzz(func(t *testing.T, expr string, patch bool) {
		m := applyConfiguration(expr)
		if patch {
			m = jsonPatch(expr)
		}
		pol := &registration.MutatingAdmissionPolicy{}
		pol.Name, pol.UID, pol.Generation = "p", "p", 1
		pol.Spec = newPolicy(t, "p", nil, applyConfiguration(`Object{}`)).Spec
		pol.Spec.Mutations = []registration.Mutation{m}
		p := newPlugin(t, pol)
		p.cfg.MaxObjectBytes = 64 * 1024
		a := attrs(t, map[string]string{"app": "x"})
		if err := p.Admit(context.Background(), a); err != nil {
			return
		}
		data, err := json.Marshal(a.Object)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > p.cfg.MaxObjectBytes {
			t.Fatalf("mutated object of %d bytes", len(data))
		}
	})
}
