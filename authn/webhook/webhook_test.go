package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/review"
	"github.com/apikit-dev/apikit/certs"
)

// parent is a server answering TokenReviews, as kube-apiserver (or
// another apikit server) does.
type parent struct {
	srv      *httptest.Server
	calls    atomic.Int64
	failures atomic.Int64 // answer 503 this many times first
	last     atomic.Pointer[review.TokenReview]
	auth     atomic.Value // the Authorization header of the last call
}

func newParent(t *testing.T) *parent {
	p := &parent{}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		p.auth.Store(r.Header.Get("Authorization"))
		if p.failures.Add(-1) >= 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		var tr review.TokenReview
		if r.URL.Path != "/apis/authentication.k8s.io/v1/tokenreviews" || json.NewDecoder(r.Body).Decode(&tr) != nil {
			http.Error(w, `{"kind":"Status","message":"bad request"}`, http.StatusBadRequest)
			return
		}
		p.last.Store(&tr)
		switch tr.Spec.Token {
		case "alice-token":
			tr.Status = review.TokenReviewStatus{Authenticated: true, User: review.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"dev"},
				Extra: map[string][]string{"scopes": {"read"}}}, Audiences: tr.Spec.Audiences}
		case "vault-token":
			tr.Status = review.TokenReviewStatus{Authenticated: true, User: review.UserInfo{Username: "vault"}, Audiences: []string{"vault"}}
		case "revoked":
			tr.Status = review.TokenReviewStatus{Error: "token has been revoked"}
		case "forbidden":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"tokenreviews.authentication.k8s.io is forbidden: User \"wardle\" cannot create resource","code":403}`)
			return
		}
		tr.Spec.Token = ""
		json.NewEncoder(w).Encode(&tr)
	}))
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

func (p *parent) kubeconfig() certs.Kubeconfig {
	return certs.Kubeconfig{
		Server: p.srv.URL + "/apis/authentication.k8s.io/v1/tokenreviews",
		CAPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}),
		Token:  "credential-of-this-server",
	}
}

func TestWebhook(t *testing.T) {
	p := newParent(t)
	w, err := New(Config{Kubeconfig: p.kubeconfig(), ImplicitAudiences: []string{"api"}, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	w.client.Backoff = time.Millisecond
	ctx := context.Background()

	for _, tc := range []struct {
		name     string
		ctx      context.Context
		token    string
		wantUser string
		wantErr  string
		wantAuds []string
	}{
		{name: "authenticated", token: "alice-token", wantUser: "alice"},
		{name: "unknown", token: "nobody"},
		{name: "refused with a reason", token: "revoked", wantErr: "webhook: token has been revoked"},
		{name: "the webhook refuses us", token: "forbidden", wantErr: "403 Forbidden: tokenreviews.authentication.k8s.io is forbidden"},
		{name: "audiences asked", ctx: authn.WithAudiences(ctx, authn.Audiences{"vault", "x"}), token: "vault-token", wantUser: "vault", wantAuds: []string{"vault"}},
		{name: "audiences not met", ctx: authn.WithAudiences(ctx, authn.Audiences{"x"}), token: "vault-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.ctx
			if c == nil {
				c = ctx
			}
			resp, ok, err := w.AuthenticateToken(c, tc.token)
			switch {
			case tc.wantErr != "":
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got ok=%v err=%v, want %q", ok, err, tc.wantErr)
				}
			case tc.wantUser == "":
				if ok || err != nil {
					t.Fatalf("got %+v %v %v, want unauthenticated", resp, ok, err)
				}
			default:
				if !ok || err != nil || resp.User.Name != tc.wantUser {
					t.Fatalf("got %+v %v %v", resp, ok, err)
				}
				if tc.wantAuds != nil && !slices.Equal(resp.Audiences, tc.wantAuds) {
					t.Errorf("audiences %v, want %v", resp.Audiences, tc.wantAuds)
				}
			}
		})
	}

	resp, _, _ := w.AuthenticateToken(ctx, "alice-token")
	if u := resp.User; u.UID != "u-1" || !slices.Equal(u.Groups, []string{"dev"}) || !slices.Equal(u.Extra["scopes"], []string{"read"}) {
		t.Errorf("user %+v", u)
	}
	sent := p.last.Load()
	if sent.APIVersion != "authentication.k8s.io/v1" || sent.Kind != "TokenReview" || !slices.Equal(sent.Spec.Audiences, []string{"api"}) {
		t.Errorf("sent %+v", sent)
	}
	if got := p.auth.Load(); got != "Bearer credential-of-this-server" {
		t.Errorf("the webhook saw Authorization %q", got)
	}

	t.Run("retries a busy webhook", func(t *testing.T) {
		before := p.calls.Load()
		p.failures.Store(2)
		if _, ok, err := w.AuthenticateToken(ctx, "alice-token"); !ok || err != nil {
			t.Fatalf("%v %v", ok, err)
		}
		if n := p.calls.Load() - before; n != 3 {
			t.Errorf("%d calls, want 3", n)
		}
		p.failures.Store(10)
		if _, ok, err := w.AuthenticateToken(ctx, "alice-token"); ok || err == nil || !strings.Contains(err.Error(), "503") {
			t.Errorf("an always busy webhook: %v %v", ok, err)
		}
		p.failures.Store(0)
	})

	t.Run("cached", func(t *testing.T) {
		cached := authn.NewTokenCache(w, authn.TokenCacheOptions{SuccessTTL: time.Minute, FailureTTL: time.Minute})
		before := p.calls.Load()
		for range 5 {
			cached.AuthenticateToken(ctx, "alice-token")
			cached.AuthenticateToken(ctx, "nobody")
		}
		if n := p.calls.Load() - before; n != 2 {
			t.Errorf("%d calls for two tokens asked five times, want 2", n)
		}
	})

	t.Run("v1beta1", func(t *testing.T) {
		old, err := New(Config{Kubeconfig: p.kubeconfig(), Version: V1beta1})
		if err != nil {
			t.Fatal(err)
		}
		old.AuthenticateToken(ctx, "alice-token")
		if v := p.last.Load().APIVersion; v != "authentication.k8s.io/v1beta1" {
			t.Errorf("apiVersion %q", v)
		}
	})

	for _, bad := range []Config{
		{Kubeconfig: p.kubeconfig(), Version: "v2"},
		{Kubeconfig: certs.Kubeconfig{}},
		{Kubeconfig: certs.Kubeconfig{Server: p.srv.URL, CAPEM: []byte("garbage")}},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}
