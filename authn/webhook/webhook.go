// Package webhook delegates bearer tokens to another server with a
// TokenReview (authentication.k8s.io), as kube-apiserver's
// --authentication-token-webhook-config-file does and as a delegated API
// server behind kube-apiserver does: the other server says whether the
// token is valid and whose it is. The webhook is described by a kubeconfig
// file (its URL, CA and the credentials this server presents); the token
// cache in front of it (package authn) keeps the answers for
// --authentication-token-webhook-cache-ttl.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/review"
	"github.com/apikit-dev/apikit/certs"
	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
)

// Versions of the TokenReview API a webhook may speak.
const (
	V1      = "v1"
	V1beta1 = "v1beta1"
)

// Config configures New.
type Config struct {
	// Kubeconfig locates the webhook and holds the credentials this
	// server presents to it (certs.ReadKubeconfig reads one from
	// --authentication-token-webhook-config-file). insecure-skip-tls-verify
	// is refused: the webhook says who callers are.
	Kubeconfig certs.Kubeconfig
	// Version is the TokenReview version spoken: V1 (the default) or
	// V1beta1.
	Version string
	// ImplicitAudiences are the server's API audiences: asked about when
	// the context names none, and assumed when the webhook answers
	// without audiences.
	ImplicitAudiences []string
	// Timeout bounds one call; the default is 30 seconds.
	Timeout time.Duration
	// Retries is how many times a failed call (no answer, 429, 5xx) is
	// tried again, with a backoff from 500ms growing 1.5 times; 0 means
	// 4, as kube-apiserver's, and a negative value none.
	Retries int
}

// Webhook authenticates tokens by asking another server.
type Webhook struct {
	client   *iwebhook.Client
	version  string
	implicit authn.Audiences
}

// New returns the authenticator of cfg.
func New(cfg Config) (*Webhook, error) {
	switch cfg.Version {
	case "":
		cfg.Version = V1
	case V1, V1beta1:
	default:
		return nil, fmt.Errorf("webhook: unsupported TokenReview version %q; use %s or %s", cfg.Version, V1, V1beta1)
	}
	client, err := iwebhook.New(iwebhook.Config{Kubeconfig: cfg.Kubeconfig, Timeout: cfg.Timeout, Retries: cfg.Retries})
	if err != nil {
		return nil, err
	}
	return &Webhook{client: client, version: cfg.Version, implicit: cfg.ImplicitAudiences}, nil
}

// AuthenticateToken implements authn.TokenAuthenticator.
func (w *Webhook) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	want, checkAuds := authn.AudiencesFrom(ctx)
	if !checkAuds {
		want = w.implicit
	}
	tr := review.TokenReview{Spec: review.TokenReviewSpec{Token: token, Audiences: want}}
	tr.APIVersion, tr.Kind = review.GroupName+"/"+w.version, "TokenReview"
	body, err := json.Marshal(&tr)
	if err != nil {
		return nil, false, fmt.Errorf("webhook: encoding TokenReview: %w", err)
	}
	var result review.TokenReview
	if err := w.client.Post(ctx, body, &result); err != nil {
		return nil, false, fmt.Errorf("webhook: %w", err)
	}
	if result.Kind != "TokenReview" {
		return nil, false, fmt.Errorf("webhook: the webhook answered a %q, not a TokenReview", result.Kind)
	}
	st := result.Status
	if !st.Authenticated {
		if st.Error != "" {
			return nil, false, fmt.Errorf("webhook: %s", st.Error)
		}
		return nil, false, nil
	}
	var auds authn.Audiences
	if checkAuds && len(w.implicit) > 0 {
		got := authn.Audiences(st.Audiences)
		if len(got) == 0 {
			got = w.implicit
		}
		if auds = want.Intersect(got); len(auds) == 0 {
			return nil, false, nil
		}
	}
	return &authn.Response{User: st.User.User(), Audiences: auds}, true, nil
}
