package authn

import (
	"context"
	"errors"
	"net/http"
)

// Union asks each authenticator in turn and returns the first that
// authenticates the request. When none does, it returns the errors of
// those that failed, joined (nil if every one simply did not recognise the
// request). Order matters: kube-apiserver puts the front proxy's request
// headers first, then client certificates, then bearer tokens.
func Union(as ...Authenticator) Authenticator {
	switch len(as) {
	case 0:
		return Func(func(*http.Request) (*Response, bool, error) { return nil, false, nil })
	case 1:
		return as[0]
	}
	return Func(func(r *http.Request) (*Response, bool, error) {
		var errs []error
		for _, a := range as {
			resp, ok, err := a.AuthenticateRequest(r)
			if ok {
				return resp, true, nil
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// UnionToken is Union for token authenticators: the first that
// authenticates the token wins.
func UnionToken(ts ...TokenAuthenticator) TokenAuthenticator {
	if len(ts) == 1 {
		return ts[0]
	}
	return TokenFunc(func(ctx context.Context, token string) (*Response, bool, error) {
		var errs []error
		for _, t := range ts {
			resp, ok, err := t.AuthenticateToken(ctx, token)
			if ok {
				return resp, true, nil
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// WithAnonymous returns an authenticator that asks a first and, when a
// finds no credential at all, authenticates the request as
// system:anonymous in the group system:unauthenticated, so that the
// authorizer decides what anonymous callers may do. A request whose
// credentials are invalid is still refused: a bad token must never turn
// into anonymous access. allow, when not nil, limits anonymous access to
// the requests it accepts (the paths of a structured anonymous
// configuration).
func WithAnonymous(a Authenticator, allow func(*http.Request) bool) Authenticator {
	return Func(func(r *http.Request) (*Response, bool, error) {
		resp, ok, err := a.AuthenticateRequest(r)
		if ok || err != nil {
			return resp, ok, err
		}
		if allow != nil && !allow(r) {
			return nil, false, nil
		}
		return &Response{User: User{Name: Anonymous, Groups: []string{AllUnauthenticated}}}, true, nil
	})
}
