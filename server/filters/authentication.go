package filters

import (
	"log/slog"
	"net/http"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/respond"
)

// WithAuthentication runs the authenticator and puts the user in the context.
// Authenticated users are also members of system:authenticated. A request
// without valid credentials gets a 401 Status and goes no further, unless its
// path is in publicPaths (health endpoints): then it proceeds as
// system:anonymous and authorization decides.
func WithAuthentication(h http.Handler, a authn.Authenticator, publicPaths []string) http.Handler {
	public := make(map[string]bool, len(publicPaths))
	for _, p := range publicPaths {
		public[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			slog.Debug("authentication failed", "path", r.URL.Path, "err", err)
		}
		if err != nil || !ok {
			if public[r.URL.Path] {
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
