package filters

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/respond"
)

// WithAuthentication runs the authenticator and puts the user in the context.
// Authenticated users are also members of system:authenticated. A request
// without valid credentials gets a 401 Status and goes no further, unless it
// carries no credentials at all and its path is in publicPaths (health
// endpoints; a trailing "*" matches a prefix): then it proceeds as
// system:anonymous and authorization decides. Invalid credentials are a 401
// everywhere, as in kube-apiserver.
//
// Over HTTP/2, a request refused with 401 or served to an anonymous user
// (system:anonymous, or any member of system:unauthenticated) closes its
// connection after the response, as kube-apiserver's mitigation of
// CVE-2023-44487 and CVE-2023-39325 does: HTTP/2 lets one connection carry
// hundreds of concurrent streams, and a client who has proven nothing must
// pay a TLS handshake per request, as with HTTP/1.1 without keep-alive.
// Go's HTTP/2 server answers "Connection: close" with a GOAWAY and closes
// the connection once its streams are done.
func WithAuthentication(h http.Handler, a authn.Authenticator, publicPaths []string) http.Handler {
	public := make(map[string]bool, len(publicPaths))
	var publicPrefixes []string
	for _, p := range publicPaths {
		if strings.HasSuffix(p, "*") {
			publicPrefixes = append(publicPrefixes, strings.TrimSuffix(p, "*"))
		} else {
			public[p] = true
		}
	}
	isPublic := func(path string) bool {
		if public[path] {
			return true
		}
		for _, p := range publicPrefixes {
			if strings.HasPrefix(path, p) {
				return true
			}
		}
		return false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := metrics.From(r.Context())
		start := time.Now()
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			slog.Debug("authentication failed", "path", r.URL.Path, "err", err)
		}
		if err != nil || !ok {
			closeHTTP2(w, r)
			if err == nil && isPublic(r.URL.Path) {
				// kube-apiserver's anonymous authenticator succeeds here.
				m.ObserveAuthentication(metrics.AuthnSuccess, authn.Anonymous, time.Since(start))
				u := &authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}
				h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), u)))
				return
			}
			result := metrics.AuthnFailure
			if err != nil {
				result = metrics.AuthnError
			}
			m.ObserveAuthentication(result, "", time.Since(start))
			respond.Error(w, r, meta.NewUnauthorized("Unauthorized"))
			return
		}
		m.ObserveAuthentication(metrics.AuthnSuccess, resp.User.Name, time.Since(start))
		u := resp.User
		if u.Name == authn.Anonymous || u.InGroup(authn.AllUnauthenticated) {
			closeHTTP2(w, r)
		}
		if !u.InGroup(authn.AllAuthenticated) && !u.InGroup(authn.AllUnauthenticated) {
			u.Groups = append(u.Groups[:len(u.Groups):len(u.Groups)], authn.AllAuthenticated)
		}
		// Credentials must not reach handlers or backends behind a proxy.
		r.Header.Del("Authorization")
		if l := request.LogValuesFrom(r.Context()); l != nil {
			l.Add("user", u.Name)
		}
		h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), &u)))
	})
}

// closeHTTP2 has the server close an HTTP/2 connection (GOAWAY) once r is
// answered. HTTP/1.x connections are left alone, as in kube-apiserver.
func closeHTTP2(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		w.Header().Set("Connection", "close")
	}
}
