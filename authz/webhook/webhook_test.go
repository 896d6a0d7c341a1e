package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/authz/review"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/ttlcache"
)

// remote is a SubjectAccessReview server answering with answer.
func remote(t *testing.T, answer func(review.SubjectAccessReview) (int, review.SubjectAccessReviewStatus)) (*httptest.Server, *atomic.Int32, certs.Kubeconfig) {
	t.Helper()
	var calls atomic.Int32
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var sar review.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		code, st := answer(sar)
		if code != http.StatusOK {
			http.Error(w, "unavailable", code)
			return
		}
		sar.Status = st
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(s.Close)
	kc := certs.Kubeconfig{Server: s.URL, Token: "s3cret",
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})}
	return s, &calls, kc
}

func TestAuthorize(t *testing.T) {
	var asked review.SubjectAccessReview
	_, calls, kc := remote(t, func(sar review.SubjectAccessReview) (int, review.SubjectAccessReviewStatus) {
		asked = sar
		switch sar.Spec.User {
		case "allowed":
			return 200, review.SubjectAccessReviewStatus{Allowed: true, Reason: "yes"}
		case "denied":
			return 200, review.SubjectAccessReviewStatus{Denied: true, Reason: "never"}
		}
		return 200, review.SubjectAccessReviewStatus{Reason: "no opinion"}
	})
	a, err := New(Config{Kubeconfig: kc, AuthorizedTTL: time.Minute, UnauthorizedTTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The cache's clock moves only when the test says, so that a loaded
	// machine's pauses do not expire answers early.
	var elapsed atomic.Int64
	start := time.Now()
	a.answers = ttlcache.New[string, review.SubjectAccessReviewStatus](cacheSize, func() time.Time {
		return start.Add(time.Duration(elapsed.Load()))
	})
	attrs := func(name string) authz.Attributes {
		return authz.Attributes{User: &authn.User{Name: name, UID: "u1", Groups: []string{"g"}, Extra: map[string][]string{"scopes": {"a"}}},
			Verb: "get", ResourceRequest: true, APIGroup: "wardle.example.com", APIVersion: "v1beta1", Resource: "flunders",
			Subresource: "status", Namespace: "ns", Name: "f"}
	}
	for _, tc := range []struct {
		user   string
		want   authz.Decision
		reason string
	}{{"allowed", authz.DecisionAllow, "yes"}, {"denied", authz.DecisionDeny, "never"}, {"other", authz.DecisionNoOpinion, "no opinion"}} {
		d, reason, err := a.Authorize(context.Background(), attrs(tc.user))
		if err != nil || d != tc.want || reason != tc.reason {
			t.Errorf("%s: %v %q %v", tc.user, d, reason, err)
		}
	}
	if asked.APIVersion != "authorization.k8s.io/v1" || asked.Kind != "SubjectAccessReview" ||
		*asked.Spec.ResourceAttributes != (review.ResourceAttributes{Namespace: "ns", Verb: "get", Group: "wardle.example.com",
			Version: "v1beta1", Resource: "flunders", Subresource: "status", Name: "f"}) ||
		asked.Spec.UID != "u1" || asked.Spec.Extra["scopes"][0] != "a" {
		t.Errorf("asked %+v", asked)
	}
	// Allowed answers are cached for AuthorizedTTL, others for
	// UnauthorizedTTL.
	n := calls.Load()
	for _, u := range []string{"allowed", "denied"} {
		if _, _, err := a.Authorize(context.Background(), attrs(u)); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != n {
		t.Errorf("cached answers asked again: %d calls, want %d", calls.Load(), n)
	}
	elapsed.Add(int64(100 * time.Millisecond))
	for _, u := range []string{"allowed", "denied"} {
		if _, _, err := a.Authorize(context.Background(), attrs(u)); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != n+1 {
		t.Errorf("after the unauthorized TTL: %d calls, want %d", calls.Load(), n+1)
	}
	// Non-resource requests.
	if d, _, _ := a.Authorize(context.Background(), authz.Attributes{User: &authn.User{Name: "allowed"}, Verb: "get", Path: "/healthz"}); d != authz.DecisionAllow ||
		asked.Spec.NonResourceAttributes == nil || asked.Spec.NonResourceAttributes.Path != "/healthz" || asked.Spec.ResourceAttributes != nil {
		t.Errorf("non-resource: %v %+v", d, asked.Spec)
	}
	if _, _, incomplete, err := a.RulesFor(context.Background(), &authn.User{Name: "x"}, "ns"); !incomplete || err == nil {
		t.Errorf("RulesFor: incomplete %v err %v", incomplete, err)
	}
}

func TestRetriesAndErrors(t *testing.T) {
	var fail atomic.Int32
	fail.Store(2)
	_, calls, kc := remote(t, func(review.SubjectAccessReview) (int, review.SubjectAccessReviewStatus) {
		if fail.Add(-1) >= 0 {
			return http.StatusServiceUnavailable, review.SubjectAccessReviewStatus{}
		}
		return 200, review.SubjectAccessReviewStatus{Allowed: true}
	})
	a, err := New(Config{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	a.client.Backoff = time.Millisecond
	attrs := authz.Attributes{User: &authn.User{Name: "x"}, Verb: "get", Path: "/"}
	if d, _, err := a.Authorize(context.Background(), attrs); err != nil || d != authz.DecisionAllow || calls.Load() != 3 {
		t.Errorf("after two 503s: %v %v, %d calls", d, err, calls.Load())
	}

	// A server that keeps failing: no opinion, and the error.
	fail.Store(100)
	if a, err = New(Config{Kubeconfig: kc, Retries: 2}); err != nil {
		t.Fatal(err)
	}
	a.client.Backoff = time.Millisecond
	attrs.Path = "/other"
	d, _, err := a.Authorize(context.Background(), attrs)
	if d != authz.DecisionNoOpinion || err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") {
		t.Errorf("failing webhook: %v %v", d, err)
	}
	// A wrong credential is not retried.
	kc.Token = "wrong"
	b, err := New(Config{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	if _, _, err := b.Authorize(context.Background(), attrs); err == nil || calls.Load() != before+1 {
		t.Errorf("401: %v after %d calls", err, calls.Load()-before)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("a config without a server")
	}
}
