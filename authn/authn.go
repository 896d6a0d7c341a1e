package authn

import (
	"context"
	"net/http"
)

// Well-known users and groups, as Kubernetes names them.
const (
	Anonymous             = "system:anonymous"
	AllAuthenticated      = "system:authenticated"
	AllUnauthenticated    = "system:unauthenticated"
	SystemPrivilegedGroup = "system:masters"
	APIServerUser         = "system:apiserver"
)

// User is who a request acts as.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// InGroup reports whether u is a member of group.
func (u *User) InGroup(group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// Response is what an authenticator learned about a request.
type Response struct {
	User User
	// Audiences are the audiences the credential was valid for, when the
	// authenticator checks audiences.
	Audiences []string
}

// Authenticator authenticates a request. It returns ok=false with a nil
// error when the request carries no credential it understands (so another
// authenticator may try), and an error when it carries one that is invalid.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (resp *Response, ok bool, err error)
}

// Func adapts a function to Authenticator.
type Func func(r *http.Request) (*Response, bool, error)

// AuthenticateRequest calls f.
func (f Func) AuthenticateRequest(r *http.Request) (*Response, bool, error) { return f(r) }

type userKey struct{}

// WithUser returns a context carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user a context carries.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}
