package filters

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/respond"
)

// WithAuthentication runs the authenticator and puts the user in the context.
// Authenticated users are also members of system:authenticated. A request
// without valid credentials gets a 401 Status and goes no further, unless it
// carries no credentials at all and its path is in publicPaths (health
// endpoints; a trailing "*" matches a prefix): then it proceeds as
// system:anonymous and authorization decides. Invalid credentials are a 401
// everywhere, as in kube-apiserver.
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
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			slog.Debug("authentication failed", "path", r.URL.Path, "err", err)
		}
		if err != nil || !ok {
			if err == nil && isPublic(r.URL.Path) {
				u := &authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}
				h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), u)))
				return
			}
			respond.Error(w, r, meta.NewUnauthorized("Unauthorized"))
			return
		}
		u := resp.User
		if !u.InGroup(authn.AllAuthenticated) && !u.InGroup(authn.AllUnauthenticated) {
			u.Groups = append(u.Groups[:len(u.Groups):len(u.Groups)], authn.AllAuthenticated)
		}
		// Credentials must not reach handlers or backends behind a proxy.
		r.Header.Del("Authorization")
		h.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), &u)))
	})
}
