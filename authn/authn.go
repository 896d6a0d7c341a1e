package authn

import (
	"context"
	"net/http"
	"slices"
)

// Well-known users and groups, as Kubernetes names them.
const (
	Anonymous             = "system:anonymous"
	AllAuthenticated      = "system:authenticated"
	AllUnauthenticated    = "system:unauthenticated"
	SystemPrivilegedGroup = "system:masters"
)

// Service-account user names and groups, as Kubernetes names them: the
// authenticators of authn/serviceaccount make them, and authorization and
// flow control match them without importing those.
const (
	// ServiceAccountUsernamePrefix starts every service account's user
	// name: system:serviceaccount:<namespace>:<name>.
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	// AllServiceAccountsGroup holds every service account.
	AllServiceAccountsGroup = "system:serviceaccounts"
	// ServiceAccountGroupPrefix starts the group of a namespace's service
	// accounts: system:serviceaccounts:<namespace>.
	ServiceAccountGroupPrefix = "system:serviceaccounts:"
)

// CredentialIDKey is the user extra under which authenticators record
// which credential was used (JTI=<token id> for JWTs, X509SHA256=<digest>
// for certificates), as kube-apiserver does, so that audit logs can tell
// two tokens of one user apart without holding either.
const CredentialIDKey = "authentication.kubernetes.io/credential-id"

// User is who a request acts as.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// InGroup reports whether u is a member of group.
func (u *User) InGroup(group string) bool {
	return slices.Contains(u.Groups, group)
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
// Errors never contain the credential.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (resp *Response, ok bool, err error)
}

// Func adapts a function to Authenticator.
type Func func(r *http.Request) (*Response, bool, error)

// AuthenticateRequest calls f.
func (f Func) AuthenticateRequest(r *http.Request) (*Response, bool, error) { return f(r) }

// TokenAuthenticator authenticates a bearer token. Like Authenticator it
// returns ok=false with a nil error for a token it does not recognise (a
// JWT from another issuer, say) and an error for one it recognises as
// invalid. ctx may carry the audiences the token must be valid for (see
// WithAudiences).
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (resp *Response, ok bool, err error)
}

// TokenFunc adapts a function to TokenAuthenticator.
type TokenFunc func(ctx context.Context, token string) (*Response, bool, error)

// AuthenticateToken calls f.
func (f TokenFunc) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	return f(ctx, token)
}

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
