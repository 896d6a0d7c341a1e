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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/review"
	"github.com/apikit-dev/apikit/certs"
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

// maxResponseBytes bounds a TokenReview answer.
const maxResponseBytes = 1 << 20

// Webhook authenticates tokens by asking another server.
type Webhook struct {
	url      string
	creds    certs.Kubeconfig // its BearerToken, read for every call
	client   *http.Client
	version  string
	implicit authn.Audiences
	retries  int
	backoff  time.Duration
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
	if cfg.Kubeconfig.Server == "" {
		return nil, errors.New("webhook: the kubeconfig names no server")
	}
	tlsConfig, err := cfg.Kubeconfig.ClientTLSConfig()
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 4
	}
	return &Webhook{
		url:   cfg.Kubeconfig.Server,
		creds: cfg.Kubeconfig,
		client: &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{
			TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 100,
			Proxy: nil, // the webhook is called directly, as the authorization webhook is
		}},
		version: cfg.Version, implicit: cfg.ImplicitAudiences,
		retries: max(cfg.Retries, 0), backoff: 500 * time.Millisecond,
	}, nil
}

// errRetriable marks failures worth another attempt.
type errRetriable struct{ error }

func (e errRetriable) Unwrap() error { return e.error }

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
	wait := w.backoff
	for attempt := 0; ; attempt++ {
		err = w.call(ctx, body, &result)
		var retriable errRetriable
		if err == nil || !errors.As(err, &retriable) || attempt >= w.retries {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, false, fmt.Errorf("webhook: %w (after %v)", ctx.Err(), err)
		}
		wait += wait / 2
	}
	if err != nil {
		return nil, false, fmt.Errorf("webhook: %w", err)
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

// call makes one attempt.
func (w *Webhook) call(ctx context.Context, body []byte, into *review.TokenReview) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if token := w.creds.BearerToken(); token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return errRetriable{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return errRetriable{fmt.Errorf("reading the answer: %w", err)}
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return errRetriable{fmt.Errorf("the webhook answered %s", resp.Status)}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		// The body of a refusal may be a Status; its message helps, and
		// the token never appears in it.
		return fmt.Errorf("the webhook answered %s%s", resp.Status, statusMessage(data))
	case len(data) > maxResponseBytes:
		return fmt.Errorf("the webhook's answer is larger than %d bytes", maxResponseBytes)
	}
	*into = review.TokenReview{}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decoding the webhook's answer: %w", err)
	}
	if into.Kind != "TokenReview" {
		return fmt.Errorf("the webhook answered a %q, not a TokenReview", into.Kind)
	}
	return nil
}

// statusMessage returns ": <message>" of a Status body, or "".
func statusMessage(data []byte) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &st) != nil || st.Kind != "Status" || st.Message == "" {
		return ""
	}
	return ": " + st.Message
}
