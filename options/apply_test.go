package options

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
)

func itoa(i int) string { return strconv.Itoa(i) }

// newConfig applies c to a fresh server.Config.
func newConfig(t *testing.T, c CompletedOptions) *server.Config {
	t.Helper()
	cfg := server.NewConfig()
	if err := c.ApplyTo(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestApplyTo(t *testing.T) {
	o, _ := newTestOptions(t, "--bind-address=127.0.0.2", "--secure-port=9443", "--max-requests-inflight=10", "--max-mutating-requests-inflight=5",
		"--request-timeout=30s", "--min-request-timeout=60", "--shutdown-delay-duration=3s", "--enable-priority-and-fairness=false",
		"--tls-min-version=VersionTLS13", "--runtime-config=wardle.example.com/v1alpha1=false", "--watch-cache-sizes=pods#0",
		"--storage-backend=memory", "--external-hostname=api.example.com", "--service-cluster-ip-range=10.96.0.0/12",
		"--storage-max-object-bytes=4096")
	c, err := o.Complete()
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, c)
	ss := cfg.SecureServing
	checks := []struct {
		name      string
		got, want any
	}{
		{"bind address", ss.BindAddress, "127.0.0.2"},
		{"port", ss.Port, 9443},
		{"certificate", ss.Certificate, o.SecureServing.Certificate},
		{"cert dir", ss.CertDir, o.SecureServing.CertDirectory},
		{"min TLS version", ss.MinTLSVersion, uint16(tls.VersionTLS13)},
		{"service IP in alternate IPs", ss.AlternateIPs[len(ss.AlternateIPs)-1].String(), "10.96.0.1"},
		{"client CA", ss.ClientCA, o.Authentication.ClientCA},
		{"external address", cfg.ExternalAddress, "api.example.com:9443"},
		{"max requests in flight", cfg.MaxRequestsInFlight, 10},
		{"max mutating requests in flight", cfg.MaxMutatingRequestsInFlight, 5},
		{"request timeout", cfg.RequestTimeout, 30 * time.Second},
		{"min request timeout", cfg.MinRequestTimeout, time.Minute},
		{"shutdown delay", cfg.ShutdownDelayDuration, 3 * time.Second},
		{"object size limit of patches", cfg.MaxObjectBytes, int64(4096)},
		{"priority and fairness", cfg.EnablePriorityAndFairness, false},
		{"queue wait limit", cfg.RequestWaitLimit, 7500 * time.Millisecond},
		{"storage", cfg.Storage, any(o.Etcd.Storage)},
		{"wardle v1alpha1 off", cfg.APIEnabled(meta.GroupVersion{Group: "wardle.example.com", Version: "v1alpha1"}), false},
		{"wardle v1beta1 on", cfg.APIEnabled(meta.GroupVersion{Group: "wardle.example.com", Version: "v1beta1"}), true},
		{"logger", cfg.Logger, o.Logger},
		{"no etcd readiness check for memory", len(cfg.ReadyzChecks), 0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}

	embedded, _ := newTestOptions(t)
	ec, err := embedded.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if cfg := newConfig(t, ec); len(cfg.ReadyzChecks) != 1 || cfg.ReadyzChecks[0].Name != "etcd" {
		t.Errorf("embedded etcd: readyz checks %v", cfg.ReadyzChecks)
	}

	if err := (CompletedOptions{}).ApplyTo(server.NewConfig()); err == nil {
		t.Error("a zero CompletedOptions applied")
	}
}

func TestAuthenticationAndAuthorizationApplied(t *testing.T) {
	tlsRequest := func(t *testing.T, user string) *http.Request {
		r := httptest.NewRequest("GET", "/apis", nil)
		if user != "" {
			r.TLS = &tls.ConnectionState{}
		}
		return r
	}
	for _, tc := range []struct {
		name      string
		args      []string
		wantUser  string // "" means not authenticated
		wantAllow authz.Decision
	}{
		{"defaults: no credentials, no user; RBAC, which has no policy yet", nil, "", authz.DecisionNoOpinion},
		{"always allow", []string{"--authorization-mode=AlwaysAllow"}, "", authz.DecisionAllow},
		{"anonymous", []string{"--anonymous-auth", "--authorization-mode=AlwaysDeny"}, authn.Anonymous, authz.DecisionDeny},
		{"deny then allow", []string{"--authorization-mode=AlwaysDeny,AlwaysAllow"}, "", authz.DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, tc.args...)
			c, err := o.Complete()
			if err != nil {
				t.Fatal(err)
			}
			cfg := newConfig(t, c)
			resp, ok, err := cfg.Authenticator.AuthenticateRequest(tlsRequest(t, ""))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantUser == "" && ok:
				t.Errorf("authenticated as %v", resp.User)
			case tc.wantUser != "" && (!ok || resp.User.Name != tc.wantUser):
				t.Errorf("user %v (%v), want %s", resp, ok, tc.wantUser)
			}
			d, _, _ := cfg.Authorizer.Authorize(context.Background(), authz.Attributes{User: &authn.User{Name: "admin"}, Verb: "get"})
			if d != tc.wantAllow {
				t.Errorf("decision %v, want %v", d, tc.wantAllow)
			}
		})
	}
}

func TestRuntimeConfig(t *testing.T) {
	t.Run("normalised as kube-apiserver does", func(t *testing.T) {
		o, _ := newTestOptions(t, "--runtime-config=v1=true,api/legacy=false", "--runtime-config=wardle.example.com/v1alpha1=false,api/all")
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		want := RuntimeConfig{"/v1": "true", "wardle.example.com/v1alpha1": "false", "api/all": ""}
		if !reflect.DeepEqual(o.APIEnablement.RuntimeConfig, want) {
			t.Errorf("runtime config %v, want %v", o.APIEnablement.RuntimeConfig, want)
		}
		for _, key := range []string{"v1/pods", "api/v1", "api/v1/pods"} {
			rc := RuntimeConfig{key: "false"}
			rc.Normalize()
			if !reflect.DeepEqual(rc, RuntimeConfig{"/v1": "false"}) {
				t.Errorf("%s normalised to %v", key, rc)
			}
		}
	})
	t.Run("round trip", func(t *testing.T) {
		for _, flag := range []string{
			"",
			"api/all=false,wardle.example.com/v1beta1=true",
			"/v1=true,a.example.com/v1=,api/alpha=true,b.example.com/v2beta1=false",
		} {
			rc := RuntimeConfig{}
			if err := rc.Set(flag); err != nil {
				t.Fatal(err)
			}
			if rc.String() != flag {
				t.Errorf("Set(%q).String() = %q", flag, rc.String())
			}
			again := RuntimeConfig{}
			if err := again.Set(rc.String()); err != nil || !reflect.DeepEqual(again, rc) {
				t.Errorf("Set(String()) = %v, want %v", again, rc)
			}
		}
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		a := NewAPIEnablementOptions()
		a.AddFlags(fs)
		if err := fs.Parse([]string{"--runtime-config= x.io/v1 = false ,y.io/v2", "--runtime-config=z.io/v3=true"}); err != nil {
			t.Fatal(err)
		}
		if got := fs.Lookup("runtime-config").Value.String(); got != "x.io/v1=false,y.io/v2=,z.io/v3=true" {
			t.Errorf("flag value %q", got)
		}
	})
	t.Run("enabled", func(t *testing.T) {
		gv := func(s string) meta.GroupVersion { g, _ := meta.ParseGroupVersion(s); return g }
		for _, tc := range []struct {
			flag string
			want map[string]bool
		}{
			{"", map[string]bool{"a.io/v1": true, "a.io/v1beta1": true, "a.io/v1alpha1": true}},
			{"api/all=false,a.io/v1=true", map[string]bool{"a.io/v1": true, "a.io/v2": false, "b.io/v1": false}},
			{"api/all=true,a.io/v1=false", map[string]bool{"a.io/v1": false, "a.io/v2": true}},
			{"api/alpha=false", map[string]bool{"a.io/v1alpha1": false, "a.io/v1beta1": true, "a.io/v1": true}},
			{"api/beta=false,a.io/v1beta1", map[string]bool{"a.io/v1beta1": true, "b.io/v2beta3": false, "b.io/v2": true}},
			{"api/all=false,api/ga=true", map[string]bool{"a.io/v1": true, "a.io/v1beta1": false}},
			{"api/ga=false,api/all=true", map[string]bool{"a.io/v1": false, "a.io/v1beta1": true}},
		} {
			a := NewAPIEnablementOptions()
			if err := a.RuntimeConfig.Set(tc.flag); err != nil {
				t.Fatal(err)
			}
			for v, want := range tc.want {
				if got := a.Enabled(gv(v)); got != want {
					t.Errorf("--runtime-config=%s: %s enabled %v, want %v", tc.flag, v, got, want)
				}
			}
		}
	})
	t.Run("unknown groups", func(t *testing.T) {
		a := NewAPIEnablementOptions()
		if err := a.RuntimeConfig.Set("wardle.example.com/v1alpha1=false,typo.example.com/v1=false,api/all=true,/v1=true,other.io/v2=true"); err != nil {
			t.Fatal(err)
		}
		a.Enabled(meta.GroupVersion{Group: "wardle.example.com", Version: "v1beta1"})
		if got := a.UnknownGroups(); !reflect.DeepEqual(got, []string{"other.io", "typo.example.com"}) {
			t.Errorf("unknown groups %v", got)
		}
	})
}
