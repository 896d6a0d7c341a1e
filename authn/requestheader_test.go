package authn_test

import (
	"crypto/x509"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/authn"
)

// TestRequestHeader shows that only the front proxy may name a user in
// headers, and that the headers never survive authentication, whoever sent
// them.
func TestRequestHeader(t *testing.T) {
	proxyCA, clientCA := newCA(t, "front-proxy-ca"), newCA(t, "client-ca")
	proxy := clientCert(t, proxyCA, "front-proxy-client")
	otherProxy := clientCert(t, proxyCA, "someone-else")
	user := clientCert(t, clientCA, "bob")
	rh, err := authn.NewRequestHeader(authn.RequestHeaderConfig{
		CAs:                 authn.StaticCAs{Pool: mustPool(t, proxyCA.CertPEM)},
		AllowedNames:        []string{"front-proxy-client"},
		UsernameHeaders:     []string{"X-Remote-User"},
		UIDHeaders:          []string{"X-Remote-Uid"},
		GroupHeaders:        []string{"X-Remote-Group"},
		ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// As the server puts them together: request headers first.
	server := authn.Union(rh, authn.NewX509(authn.StaticCAs{Pool: mustPool(t, clientCA.CertPEM)}))
	spoof := http.Header{
		"X-Remote-User":                     {"alice"},
		"X-Remote-Uid":                      {"u-1"},
		"X-Remote-Group":                    {"dev", "system:masters"},
		"X-Remote-Extra-Scopes":             {"read", "write"},
		"X-Remote-Extra-Example.com%2fteam": {"blue"},
		"x-remote-user":                     {"lowercase-too"},
	}

	for _, tc := range []struct {
		name     string
		chain    []*x509.Certificate
		header   http.Header
		wantUser string
		wantErr  string
	}{
		{name: "front proxy", chain: []*x509.Certificate{proxy}, header: spoof, wantUser: "alice"},
		{name: "no certificate: headers are spoofed", header: spoof},
		{name: "a user's certificate: the user, not the headers", chain: []*x509.Certificate{user}, header: spoof, wantUser: "bob"},
		{name: "proxy CA, name not allowed", chain: []*x509.Certificate{otherProxy}, header: spoof, wantErr: `common name "someone-else" is not in --requestheader-allowed-names`},
		{name: "front proxy without a user header", chain: []*x509.Certificate{proxy}, header: http.Header{"X-Remote-Group": {"dev"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tlsRequest(tc.chain...)
			for k, v := range tc.header {
				r.Header[k] = slices.Clone(v)
			}
			r.Header.Set("X-Unrelated", "kept")
			resp, ok, err := server.AuthenticateRequest(r)
			switch {
			case tc.wantErr != "":
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got ok=%v err=%v, want %q", ok, err, tc.wantErr)
				}
			case tc.wantUser == "":
				if ok || err != nil {
					t.Errorf("got %+v ok=%v err=%v, want nobody", resp, ok, err)
				}
			default:
				if !ok || err != nil || resp.User.Name != tc.wantUser {
					t.Errorf("got %+v ok=%v err=%v, want %s", resp, ok, err, tc.wantUser)
				}
			}
			for name := range r.Header {
				if strings.HasPrefix(strings.ToLower(name), "x-remote-") {
					t.Errorf("header %s survived authentication", name)
				}
			}
			if r.Header.Get("X-Unrelated") != "kept" {
				t.Error("an unrelated header was removed")
			}
		})
	}

	t.Run("what the proxy asserts", func(t *testing.T) {
		r := tlsRequest(proxy)
		for k, v := range spoof {
			r.Header[k] = slices.Clone(v)
		}
		r.Header.Add("X-Remote-Group", "")
		resp, ok, err := rh.AuthenticateRequest(r)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		u := resp.User
		if u.Name != "alice" || u.UID != "u-1" || !slices.Equal(u.Groups, []string{"dev", "system:masters"}) {
			t.Errorf("user %+v", u)
		}
		if !slices.Equal(u.Extra["scopes"], []string{"read", "write"}) || !slices.Equal(u.Extra["example.com/team"], []string{"blue"}) || len(u.Extra) != 2 {
			t.Errorf("extra %v", u.Extra)
		}
	})

	t.Run("any name when none is listed", func(t *testing.T) {
		open, err := authn.NewRequestHeader(authn.RequestHeaderConfig{CAs: authn.StaticCAs{Pool: mustPool(t, proxyCA.CertPEM)}, UsernameHeaders: []string{"X-Remote-User"}})
		if err != nil {
			t.Fatal(err)
		}
		r := tlsRequest(otherProxy)
		r.Header.Set("X-Remote-User", "carol")
		if resp, ok, _ := open.AuthenticateRequest(r); !ok || resp.User.Name != "carol" {
			t.Errorf("got %+v %v", resp, ok)
		}
	})

	if _, err := authn.NewRequestHeader(authn.RequestHeaderConfig{CAs: authn.StaticCAs{}}); err == nil {
		t.Error("no username headers accepted")
	}
}
