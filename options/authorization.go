package options

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/server"
)

// Authorization modes. RBAC and Webhook join them as they are written.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// authorizerFor builds the authorizer of each mode.
var authorizerFor = map[string]func() authz.Authorizer{
	ModeAlwaysAllow: authz.AlwaysAllow,
	ModeAlwaysDeny:  authz.AlwaysDeny,
}

// AuthorizationOptions choose how the server decides what callers may do.
type AuthorizationOptions struct {
	// Modes are asked in order; the first with an opinion decides.
	Modes []string
}

// NewAuthorizationOptions returns the default: AlwaysAllow, so that every
// authenticated user may do everything.
func NewAuthorizationOptions() *AuthorizationOptions {
	return &AuthorizationOptions{Modes: []string{ModeAlwaysAllow}}
}

// AddFlags adds --authorization-mode.
func (o *AuthorizationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Modes, "authorization-mode", o.Modes,
		"Ordered list of plug-ins to do authorization on secure port. Comma-delimited list of: "+strings.Join(modeNames(), ",")+".")
}

// Validate checks the modes, with kube-apiserver's messages.
func (o *AuthorizationOptions) Validate() []error {
	var errs []error
	if len(o.Modes) == 0 {
		errs = append(errs, errors.New("at least one authorization-mode must be passed"))
	}
	seen := map[string]bool{}
	dup := false
	for _, m := range o.Modes {
		if _, ok := authorizerFor[m]; !ok {
			errs = append(errs, fmt.Errorf("authorization-mode %q is not a valid mode", m))
		}
		dup = dup || seen[m]
		seen[m] = true
	}
	if dup {
		errs = append(errs, fmt.Errorf("authorization-mode %q has mode specified more than once", o.Modes))
	}
	return errs
}

// ApplyTo sets the server's authorizer: the modes' authorizers in order.
func (o *AuthorizationOptions) ApplyTo(c *server.Config) error {
	var chain []authz.Authorizer
	for _, m := range o.Modes {
		newAuthorizer, ok := authorizerFor[m]
		if !ok {
			return fmt.Errorf("authorization-mode %q is not a valid mode", m)
		}
		chain = append(chain, newAuthorizer())
	}
	if len(chain) == 1 {
		c.Authorizer = chain[0]
		return nil
	}
	c.Authorizer = authz.Func(func(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
		var reasons []string
		var errs []error
		for _, z := range chain {
			d, reason, err := z.Authorize(ctx, a)
			if err != nil {
				errs = append(errs, err)
			}
			if d != authz.DecisionNoOpinion {
				return d, reason, nil
			}
			if reason != "" {
				reasons = append(reasons, reason)
			}
		}
		return authz.DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
	})
	return nil
}

func modeNames() []string { return []string{ModeAlwaysAllow, ModeAlwaysDeny} }
