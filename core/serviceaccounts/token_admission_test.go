package serviceaccounts

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// tokenPlugin records what admission sees of a token request, shortens
// the requested lifetime as a mutating webhook could, and refuses when
// deny is set.
type tokenPlugin struct {
	mutated, validated []admission.Attributes
	deny               bool
}

func (*tokenPlugin) Handles(admission.Operation) bool { return true }

func (p *tokenPlugin) Admit(_ context.Context, a *admission.Attributes) error {
	p.mutated = append(p.mutated, *a)
	d := int64(1200)
	a.Object.(*TokenRequest).Spec.ExpirationSeconds = &d
	return nil
}

func (p *tokenPlugin) Validate(_ context.Context, a *admission.Attributes) error {
	p.validated = append(p.validated, *a)
	if p.deny {
		return meta.NewForbidden(meta.GroupResource{Resource: "serviceaccounts"}, a.Name, errorString("token requests are closed"))
	}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestTokenRequestAdmission checks that a token request runs the
// admission chain as kube-apiserver runs it: a CREATE of kind
// authentication.k8s.io/v1 TokenRequest on serviceaccounts/token, the
// mutating plugins on the defaulted request (their change is issued), the
// validating ones on the completed request, whose refusal issues nothing.
func TestTokenRequestAdmission(t *testing.T) {
	st, h, _ := setup(t)
	sa, err := st.Create(context.Background(), "ns", &ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: "robot"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, deny := range []bool{false, true} {
		p := &tokenPlugin{deny: deny}
		h.admission = admission.Chain{p}
		r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/serviceaccounts/robot/token?dryRun=All",
			strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`))
		r.Header.Set("Content-Type", "application/json")
		r.SetPathValue("namespace", "ns")
		r.SetPathValue("name", "robot")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		if len(p.mutated) != 1 || len(p.validated) != 1 {
			t.Fatalf("deny=%v: %d mutating and %d validating calls, want 1 and 1", deny, len(p.mutated), len(p.validated))
		}
		for _, a := range []admission.Attributes{p.mutated[0], p.validated[0]} {
			if a.Operation != admission.Create || a.Kind != tokenRequestGVK || a.Resource != serviceAccountsGVR ||
				a.Subresource != "token" || a.Namespace != "ns" || a.Name != "robot" || !a.DryRun {
				t.Errorf("attributes %+v, want a dry-run CREATE of %v on %v/token, robot in ns", a, tokenRequestGVK, serviceAccountsGVR)
			}
		}
		in := p.mutated[0].Object.(*TokenRequest)
		if in.Namespace != "ns" || in.Spec.ExpirationSeconds == nil {
			t.Errorf("mutating admission saw %+v, want the defaulted request in ns", in)
		}
		done := p.validated[0].Object.(*TokenRequest)
		if done.Name != "robot" || done.UID != sa.UID || strings.Join(done.Spec.Audiences, ",") != "api" || *done.Spec.ExpirationSeconds != 1200 {
			t.Errorf("validating admission saw %+v %+v, want the completed request with the mutated lifetime", done.ObjectMeta, done.Spec)
		}

		if deny {
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "token requests are closed") || strings.Contains(w.Body.String(), `"token"`) {
				t.Errorf("denied: %d %s, want 403 with the plugin's reason and no token", w.Code, w.Body)
			}
			continue
		}
		if w.Code != http.StatusCreated {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		var out TokenRequest
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if out.Status.Token == "" || *out.Spec.ExpirationSeconds != 1200 {
			t.Errorf("issued %+v, want a token of the mutated lifetime 1200", out.Spec)
		}
	}
}
