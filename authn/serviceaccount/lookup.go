package serviceaccount

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Account is what the authenticator learns of the service account a token
// names: its uid, and whether it is being deleted.
type Account struct {
	UID         string
	Terminating bool
}

// Lookup finds the service account namespace/name; found is false when it
// does not exist. A server that stores service accounts (the core group)
// gives the authenticator one, so that a token outlives neither its
// service account nor a namesake's recreation, as kube-apiserver's
// validator sees to.
type Lookup func(ctx context.Context, namespace, name string) (a Account, found bool, err error)

// lookupHolder lets the lookup be set after the authenticator was built:
// options build the authenticator before the server that stores service
// accounts exists.
type lookupHolder struct{ p atomic.Pointer[Lookup] }

// SetLookup makes the authenticator check each service-account token's
// service account with l (nil stops checking).
func (a *Authenticator) SetLookup(l Lookup) {
	if l == nil {
		a.lookup.p.Store(nil)
		return
	}
	a.lookup.p.Store(&l)
}

// checkAccount refuses a token whose service account is gone, was
// recreated (another uid) or is being deleted, with kube-apiserver's words.
func (a *Authenticator) checkAccount(ctx context.Context, k *KubernetesClaims) error {
	l := a.lookup.p.Load()
	if l == nil || k.Namespace == "" {
		return nil
	}
	acct, found, err := (*l)(ctx, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return fmt.Errorf("looking up service account %s/%s: %w", k.Namespace, k.ServiceAccount.Name, err)
	}
	if !found {
		return fmt.Errorf("serviceaccounts %q not found", k.ServiceAccount.Name)
	}
	if acct.UID != k.ServiceAccount.UID {
		return fmt.Errorf("service account UID (%s) does not match claim (%s)", acct.UID, k.ServiceAccount.UID)
	}
	if acct.Terminating {
		return fmt.Errorf("service account %s/%s has been deleted", k.Namespace, k.ServiceAccount.Name)
	}
	return nil
}

// Tokens is what a server needs to issue service-account tokens
// (TokenRequest) and to have them checked: options fill it from the
// --service-account-* and --api-audiences flags.
type Tokens struct {
	// Generator signs new tokens as the first issuer.
	Generator *Generator
	// Authenticator verifies them; the server storing service accounts
	// gives it a Lookup. Nil when tokens are not authenticated here.
	Authenticator *Authenticator
	// APIAudiences are a TokenRequest's audiences when it names none.
	APIAudiences []string
	// MaxExpiration caps a requested lifetime; 0 none.
	MaxExpiration time.Duration
}
