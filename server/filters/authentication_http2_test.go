package filters_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/server/filters"
)

// TestUnauthenticatedHTTP2ConnectionsClose: over HTTP/2 a request refused
// with 401, or served to an anonymous user, ends its connection (GOAWAY),
// as kube-apiserver's CVE-2023-44487 mitigation does; authenticated
// clients, and HTTP/1.1 clients, keep theirs.
func TestUnauthenticatedHTTP2ConnectionsClose(t *testing.T) {
	a := authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		switch r.Header.Get("Authorization") {
		case "known":
			return &authn.Response{User: authn.User{Name: "panda"}}, true, nil
		case "error":
			return nil, false, errors.New("bad token")
		case "anonymous":
			return &authn.Response{User: authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}}, true, nil
		case "unauthenticated-group":
			return &authn.Response{User: authn.User{Name: "someone", Groups: []string{authn.AllUnauthenticated}}}, true, nil
		}
		return nil, false, nil
	})
	h := filters.WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), a, []string{"/healthz"})
	srv := httptest.NewUnstartedServer(h)
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	const requests = 4
	for _, tc := range []struct {
		name, authorization, path string
		wantCode                  int
		closes                    bool // the HTTP/2 connection
	}{
		{"authenticated", "known", "/apis", 200, false},
		{"authentication error", "error", "/apis", 401, true},
		{"no credentials", "", "/apis", 401, true},
		{"no credentials on a public path", "", "/healthz", 200, true},
		{"anonymous", "anonymous", "/apis", 200, true},
		{"member of system:unauthenticated", "unauthenticated-group", "/apis", 200, true},
	} {
		for _, proto := range []string{"h2", "http/1.1"} {
			t.Run(tc.name+" "+proto, func(t *testing.T) {
				tr := srv.Client().Transport.(*http.Transport).Clone()
				tr.TLSClientConfig.NextProtos = []string{proto}
				tr.ForceAttemptHTTP2 = proto == "h2"
				if proto != "h2" {
					tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
				}
				defer tr.CloseIdleConnections()
				client := &http.Client{Transport: tr}
				before := conns.Load()
				for range requests {
					req, err := http.NewRequest("GET", srv.URL+tc.path, nil)
					if err != nil {
						t.Fatal(err)
					}
					if tc.authorization != "" {
						req.Header.Set("Authorization", tc.authorization)
					}
					resp, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != tc.wantCode {
						t.Errorf("code %d, want %d", resp.StatusCode, tc.wantCode)
					}
					if wantMajor := map[string]int{"h2": 2, "http/1.1": 1}[proto]; resp.ProtoMajor != wantMajor {
						t.Fatalf("served over %s", resp.Proto)
					}
				}
				got := conns.Load() - before
				switch {
				case proto != "h2" || !tc.closes:
					// HTTP/1.1 keep-alive is left alone, as in kube-apiserver.
					if got != 1 {
						t.Errorf("%d requests took %d connections, want 1", requests, got)
					}
				case got < requests:
					// One each; a request the client sent on a
					// connection as its GOAWAY arrived is retried on
					// another, so there may be more.
					t.Errorf("%d requests took %d connections, want one each", requests, got)
				}
			})
		}
	}
}
