// Package webhook delegates authorization to another API server (a
// kube-apiserver, another apikit server) with SubjectAccessReview v1, as
// kube-apiserver's --authorization-mode=Webhook does: the request's user
// and attributes are posted, the answer's allowed/denied/reason become the
// decision, and answers are cached for a while (allowed ones longer than
// the others). It sits in the authorization step of the request path.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/authz/review"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/ttlcache"
	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
)

// Config configures an Authorizer.
type Config struct {
	// Kubeconfig locates the remote server and holds the credentials this
	// server presents to it (certs.ReadKubeconfig reads one from a file).
	Kubeconfig certs.Kubeconfig
	// AuthorizedTTL and UnauthorizedTTL are how long allowed and other
	// answers are cached; 0 turns that cache off. kube-apiserver's
	// defaults are 5 minutes and 30 seconds.
	AuthorizedTTL, UnauthorizedTTL time.Duration
	// Timeout bounds one call; the default is 30 seconds.
	Timeout time.Duration
	// Retries is how many times a failed call (no answer, 429, 5xx) is
	// tried again, with a backoff from 500ms growing 1.5 times; the
	// default is 4.
	Retries int
}

// Authorizer asks a remote server. It is also an authz.RuleResolver that
// lists nothing and says so (incomplete), as kube-apiserver's does: the
// remote server's rules cannot be listed.
type Authorizer struct {
	client *iwebhook.Client
	// answers remembers allowed answers for authorizedTTL and the others
	// for unauthorizedTTL, keyed by the review's spec.
	answers         *ttlcache.Cache[string, review.SubjectAccessReviewStatus]
	authorizedTTL   time.Duration
	unauthorizedTTL time.Duration
}

// cacheSize bounds each cache, as kube-apiserver's 8192 entries do.
const cacheSize = 8192

// New returns an Authorizer for cfg.
func New(cfg Config) (*Authorizer, error) {
	client, err := iwebhook.New(iwebhook.Config{Kubeconfig: cfg.Kubeconfig, Timeout: cfg.Timeout, Retries: cfg.Retries})
	if err != nil {
		return nil, err
	}
	a := &Authorizer{client: client}
	a.answers = ttlcache.New[string, review.SubjectAccessReviewStatus](cacheSize, nil)
	a.authorizedTTL, a.unauthorizedTTL = cfg.AuthorizedTTL, cfg.UnauthorizedTTL
	return a, nil
}

// Authorize posts a SubjectAccessReview for a, or answers from the cache.
// An answer that cannot be had is NoOpinion with the error, which the
// server turns into a 500 unless another authorizer allows the request.
func (w *Authorizer) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	sar := review.SubjectAccessReview{Spec: review.SpecFrom(a)}
	sar.APIVersion, sar.Kind = review.APIVersion, "SubjectAccessReview"
	body, err := json.Marshal(&sar)
	if err != nil {
		return authz.DecisionNoOpinion, "", fmt.Errorf("webhook: encoding SubjectAccessReview: %w", err)
	}
	key, _ := json.Marshal(&sar.Spec)
	st, ok := w.cached(string(key))
	if !ok {
		st, err = w.call(ctx, body)
		if err != nil {
			return authz.DecisionNoOpinion, "", err
		}
		ttl := w.unauthorizedTTL
		if st.Allowed {
			ttl = w.authorizedTTL
		}
		w.answers.Add(string(key), st, ttl)
	}
	switch {
	case st.Allowed:
		return authz.DecisionAllow, st.Reason, nil
	case st.Denied:
		return authz.DecisionDeny, st.Reason, nil
	}
	return authz.DecisionNoOpinion, st.Reason, nil
}

func (w *Authorizer) cached(key string) (review.SubjectAccessReviewStatus, bool) {
	return w.answers.Get(key)
}

// call asks the webhook.
func (w *Authorizer) call(ctx context.Context, body []byte) (review.SubjectAccessReviewStatus, error) {
	var out review.SubjectAccessReview
	if err := w.client.Post(ctx, body, &out); err != nil {
		return review.SubjectAccessReviewStatus{}, fmt.Errorf("webhook: %w", err)
	}
	return out.Status, nil
}

// RulesFor lists nothing: the remote server's rules are unknown.
func (w *Authorizer) RulesFor(context.Context, *authn.User, string) ([]authz.ResourceRuleInfo, []authz.NonResourceRuleInfo, bool, error) {
	return nil, nil, true, errors.New("webhook authorizer does not support user rule resolution")
}
