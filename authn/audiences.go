package authn

import (
	"context"
	"slices"
)

// Audiences are the intended recipients of a credential: the "aud" claim of
// a JWT, the audiences a TokenReview asks about, the API audiences of a
// server (--api-audiences).
type Audiences []string

// Has reports whether a contains aud.
func (a Audiences) Has(aud string) bool { return slices.Contains(a, aud) }

// Intersect returns the audiences in both a and other, in a's order.
func (a Audiences) Intersect(other Audiences) Audiences {
	var out Audiences
	for _, x := range a {
		if other.Has(x) && !out.Has(x) {
			out = append(out, x)
		}
	}
	return out
}

type audiencesKey struct{}

// WithAudiences returns a context saying which audiences a token being
// authenticated must be valid for. Without it, token authenticators use the
// server's own (implicit) audiences. A TokenReview sets it from
// spec.audiences.
func WithAudiences(ctx context.Context, auds Audiences) context.Context {
	return context.WithValue(ctx, audiencesKey{}, auds)
}

// AudiencesFrom returns the audiences ctx asks for, if any.
func AudiencesFrom(ctx context.Context) (Audiences, bool) {
	auds, ok := ctx.Value(audiencesKey{}).(Audiences)
	return auds, ok && len(auds) > 0
}

// AudienceAgnostic wraps a token authenticator whose credentials name no
// audience (static tokens, a webhook that reports none): they are taken to
// be valid for the server's implicit audiences. A token checked for other
// audiences (a TokenReview for another service) is not authenticated, and
// a successful response lists the audiences both sides share, as
// kube-apiserver's WrapAudienceAgnosticToken does.
func AudienceAgnostic(implicit Audiences, t TokenAuthenticator) TokenAuthenticator {
	return TokenFunc(func(ctx context.Context, token string) (*Response, bool, error) {
		auds, ok := AudiencesFrom(ctx)
		if !ok || len(implicit) == 0 {
			return t.AuthenticateToken(ctx, token)
		}
		shared := implicit.Intersect(auds)
		if len(shared) == 0 {
			return nil, false, nil
		}
		resp, ok, err := t.AuthenticateToken(ctx, token)
		if ok && resp != nil && len(resp.Audiences) == 0 {
			r := *resp
			r.Audiences = shared
			resp = &r
		}
		return resp, ok, err
	})
}
