package webhook

import (
	"encoding/json"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/meta"
)

// FuzzAdmissionResponse feeds arbitrary webhook answers through what the
// dispatcher does with them (verification, then a mutating webhook's
// patch): no panic, and no patched object beyond the size limit.
func FuzzAdmissionResponse(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7ImEiOiJiIn19XQ=="}}`,
		// copy doubling the object each time
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"` +
			b64(`[{"op":"copy","from":"/metadata","path":"/spec/a"},{"op":"copy","from":"/spec","path":"/metadata/b"},{"op":"copy","from":"/metadata","path":"/spec/c"},{"op":"copy","from":"/spec","path":"/metadata/d"}]`) + `"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":false,"status":{"code":200}}}`,
		`{"response":null}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"` +
			b64(`[{"op":"replace","path":"/kind","value":"Other"}]`) + `"}}`,
	} {
		f.Add([]byte(seed))
	}
	const limit = 4 << 10
	w, err := New(Config{Source: NewSource(), MaxObjectBytes: limit})
	if err != nil {
		f.Fatal(err)
	}
	h := newHook("c", "fuzz.example.com", registration.WebhookClientConfig{}, nil, nil, nil, nil, nil, nil, nil, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		var review AdmissionReview
		if json.Unmarshal(data, &review) != nil {
			return
		}
		if err := verifyResponse(&review, "u", true); err != nil {
			return
		}
		a := attrs(admission.Create, map[string]string{"x": "y"})
		inv := &invocation{h: h, kind: a.Kind, resource: a.Resource}
		obj := a.Object
		objJSON, err := encode(obj, a.Kind)
		if err != nil {
			t.Fatal(err)
		}
		if !review.Response.Allowed {
			_ = denied(h.name, review.Response.Result)
			return
		}
		if _, err := w.applyPatch(inv, a, obj, objJSON, review.Response.Patch); err != nil {
			return
		}
		out, err := json.Marshal(a.Object)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > limit+64 { // re-encoding may add empty fields
			t.Fatalf("patched object of %d bytes passed a limit of %d", len(out), limit)
		}
		if tm := a.Object.GetTypeMeta(); tm.Kind != "" && tm.Kind != "Widget" {
			t.Fatalf("patch changed the kind to %q", tm.Kind)
		}
		_ = meta.Object(obj)
	})
}

func b64(s string) string {
	out, _ := json.Marshal([]byte(s))
	return string(out[1 : len(out)-1])
}
