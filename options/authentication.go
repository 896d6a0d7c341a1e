package options

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server"
)

// AuthenticationOptions choose how the server identifies callers. For now:
// client certificates (--client-ca-file, or the development PKI's CA) and
// anonymous requests; token, request-header and webhook authentication add
// their flags and authenticators here.
type AuthenticationOptions struct {
	// ClientCAFile verifies client certificates.
	ClientCAFile string
	// Anonymous lets requests without credentials in as system:anonymous.
	Anonymous bool

	// Set by Complete.

	// ClientCA verifies client certificates: from ClientCAFile, or the
	// development PKI's CA.
	ClientCA authn.CAProvider
}

// NewAuthenticationOptions returns the defaults: no client CA, anonymous
// requests refused.
func NewAuthenticationOptions() *AuthenticationOptions { return &AuthenticationOptions{} }

// AddFlags adds the authentication flags.
func (o *AuthenticationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile,
		"If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated "+
			"with an identity corresponding to the CommonName of the client certificate.")
	fs.BoolVar(&o.Anonymous, "anonymous-auth", o.Anonymous,
		"Enables anonymous requests to the secure port of the API server. Requests that are not rejected by another authentication method "+
			"are treated as anonymous requests. Anonymous requests have a username of system:anonymous, and a group name of system:unauthenticated.")
}

// Validate has nothing to check before the files are read.
func (o *AuthenticationOptions) Validate() []error { return nil }

// loadClientCA reads --client-ca-file.
func (o *AuthenticationOptions) loadClientCA() error {
	if o.ClientCAFile == "" {
		return nil
	}
	data, err := os.ReadFile(o.ClientCAFile)
	if err != nil {
		return fmt.Errorf("--client-ca-file: %w", err)
	}
	pool, err := certs.PoolFromPEM(data)
	if err != nil {
		return fmt.Errorf("--client-ca-file %s: %w", o.ClientCAFile, err)
	}
	o.ClientCA = authn.StaticCAs{Pool: pool}
	return nil
}

// ApplyAuthorization turns anonymous requests off under the AlwaysAllow
// authorizer, which would let anyone do anything, and says so, as
// kube-apiserver does.
func (o *AuthenticationOptions) ApplyAuthorization(authz *AuthorizationOptions, log *slog.Logger) {
	if !o.Anonymous || authz == nil {
		return
	}
	for _, m := range authz.Modes {
		if m == ModeAlwaysAllow {
			log.Warn("AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer")
			o.Anonymous = false
			return
		}
	}
}

// ApplyTo sets the server's authenticator: client certificates signed by
// the client CA, then anonymous when enabled.
func (o *AuthenticationOptions) ApplyTo(c *server.Config) error {
	var a authn.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) { return nil, false, nil })
	if o.ClientCA != nil {
		c.SecureServing.ClientCA = o.ClientCA
		a = authn.NewX509(o.ClientCA)
	}
	if o.Anonymous {
		a = withAnonymous(a)
	}
	c.Authenticator = a
	return nil
}

// withAnonymous authenticates as system:anonymous the requests that a finds
// no credentials in; invalid credentials still fail.
func withAnonymous(a authn.Authenticator) authn.Authenticator {
	return authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		resp, ok, err := a.AuthenticateRequest(r)
		if ok || err != nil {
			return resp, ok, err
		}
		return &authn.Response{User: authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}}, true, nil
	})
}
