package review

import (
	"context"
	"errors"
	"log/slog"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Resources returns the two reviews of authentication.k8s.io/v1, each
// POST-only and never stored.
//
// SelfSubjectReview answers with the user the request was authenticated
// (and, with Impersonate-* headers, impersonated) as: `kubectl auth
// whoami`.
//
// TokenReview checks spec.token with tokens (the server's token
// authenticators, with their cache) for spec.audiences, or for
// apiAudiences when it names none, so that this server can be another's
// token webhook. Who may ask is the authorizer's business (create on
// tokenreviews.authentication.k8s.io). The token is not sent back: the
// answer's spec.token is empty. With a nil tokens (no token
// authentication configured) every token is unauthenticated.
func Resources(tokens authn.TokenAuthenticator, apiAudiences []string) ([]registry.Resource, error) {
	ssr, err := selfSubjectReviews()
	if err != nil {
		return nil, err
	}
	tr, err := tokenReviews(tokens, apiAudiences)
	if err != nil {
		return nil, err
	}
	return []registry.Resource{ssr, tr}, nil
}

var groupVersion = meta.GroupVersion{Group: GroupName, Version: Version}

func selfSubjectReviews() (registry.Resource, error) {
	return registry.NewCreateOnly(registry.CreateOnlyOptions[*SelfSubjectReview]{
		GroupVersion:   groupVersion,
		Resource:       "selfsubjectreviews",
		Kind:           "SelfSubjectReview",
		ProtobufToJSON: selfSubjectReviewProtobuf.ToJSON,
		Create: func(ctx context.Context, r *SelfSubjectReview) (*SelfSubjectReview, error) {
			u, ok := authn.UserFrom(ctx)
			if !ok {
				return nil, meta.NewInternalError(errors.New("no user in the request"))
			}
			r.Status.UserInfo = UserInfoFor(*u)
			return r, nil
		},
	})
}

// errBadAudiences is kube-apiserver's answer when an authenticator
// accepted a token for none of the audiences asked about: a bug of the
// authenticator, not of the caller.
var errBadAudiences = meta.NewInternalError(errors.New("error validating audience"))

func tokenReviews(tokens authn.TokenAuthenticator, apiAudiences []string) (registry.Resource, error) {
	if tokens == nil {
		tokens = authn.TokenFunc(func(context.Context, string) (*authn.Response, bool, error) { return nil, false, nil })
	}
	return registry.NewCreateOnly(registry.CreateOnlyOptions[*TokenReview]{
		GroupVersion:   groupVersion,
		Resource:       "tokenreviews",
		Kind:           "TokenReview",
		ProtobufToJSON: tokenReviewProtobuf.ToJSON,
		Create: func(ctx context.Context, r *TokenReview) (*TokenReview, error) {
			token := r.Spec.Token
			if token == "" {
				return nil, meta.NewBadRequest("token is required for TokenReview in authentication")
			}
			r.Spec.Token = ""
			auds := authn.Audiences(r.Spec.Audiences)
			if len(auds) == 0 {
				auds = apiAudiences
			}
			if len(auds) > 0 {
				ctx = authn.WithAudiences(ctx, auds)
			}
			resp, ok, err := tokens.AuthenticateToken(ctx, token)
			r.Status = TokenReviewStatus{Authenticated: ok}
			if err != nil {
				r.Status.Error = err.Error()
			}
			if !ok {
				return r, nil
			}
			if len(auds) > 0 && len(auds.Intersect(resp.Audiences)) == 0 {
				slog.Error("a token authenticator accepted a token for none of the audiences asked for", "want", []string(auds), "got", resp.Audiences)
				return nil, errBadAudiences
			}
			// As kube-apiserver's reviews do, the answer includes the
			// group every authenticated user is in.
			u := resp.User
			if !u.InGroup(authn.AllAuthenticated) && !u.InGroup(authn.AllUnauthenticated) {
				u.Groups = append(u.Groups[:len(u.Groups):len(u.Groups)], authn.AllAuthenticated)
			}
			r.Status.User = UserInfoFor(u)
			r.Status.Audiences = resp.Audiences
			return r, nil
		},
	})
}
