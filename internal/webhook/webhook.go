// Package webhook is the client every webhook of the server shares: it
// posts a TokenReview or SubjectAccessReview as JSON to the server a
// kubeconfig names (TLS and bearer token from the kubeconfig, the token
// read again for every call so a rotated one is followed) and decodes the
// answer, retrying with backoff when there is no answer, a 429 or a 5xx.
// Admission webhooks, which name their URL per call and are not retried,
// use the same transport (NewTransport) and one attempt (Post).
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/tracing"
)

// maxResponseBytes bounds an answer: a review is small, a webhook that
// streams more is broken or hostile.
const maxResponseBytes = 1 << 20

// Config configures a Client.
type Config struct {
	Kubeconfig certs.Kubeconfig
	// Timeout bounds one call; the default is 30 s.
	Timeout time.Duration
	// Retries after the first attempt; 0 means the default 4, less than 0
	// none.
	Retries int
}

// Client posts reviews to one webhook.
type Client struct {
	url     string
	creds   certs.Kubeconfig
	http    *http.Client
	retries int
	// Backoff is the first wait between attempts; it grows by half each
	// time. Tests shorten it.
	Backoff time.Duration
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
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
	return &Client{
		url:     cfg.Kubeconfig.Server,
		creds:   cfg.Kubeconfig,
		http:    &http.Client{Timeout: cfg.Timeout, Transport: NewTransport(tlsConfig)},
		retries: max(cfg.Retries, 0),
		Backoff: 500 * time.Millisecond,
	}, nil
}

// URL is the webhook's address.
func (c *Client) URL() string { return c.url }

// errRetriable marks failures worth another attempt.
type errRetriable struct{ error }

func (e errRetriable) Unwrap() error { return e.error }

// Post sends body and decodes a 2xx answer into out (unless out is nil),
// retrying failures
// that may pass (no answer, 429, 5xx) until the retries are spent or ctx
// ends. Errors never contain the request body (it may hold a token).
func (c *Client) Post(ctx context.Context, body []byte, out any) error {
	ctx, span := tracing.Start(ctx, "Call webhook", attribute.String("url", c.url))
	defer span.End()
	wait := c.Backoff
	for attempt := 0; ; attempt++ {
		err := c.post(ctx, body, out)
		if err == nil || !isRetriable(err) || attempt >= c.retries {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		}
		wait += wait / 2
	}
}

// post makes one attempt.
func (c *Client) post(ctx context.Context, body []byte, out any) error {
	return Post(ctx, c.http, Request{URL: c.url, Token: c.creds.BearerToken(), Body: body, MaxResponseBytes: maxResponseBytes}, out)
}

// NewTransport returns the transport of a webhook client: TLS from
// tlsConfig, HTTP/2 when the server offers it, idle connections kept (a
// call reuses one, with no new TLS handshake), and no proxy, since a
// webhook on this host or network is called directly.
func NewTransport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 100,
		IdleConnTimeout: 90 * time.Second, Proxy: nil,
	}
}

// Request is one call of Post.
type Request struct {
	URL string
	// Token, when set, is sent as a bearer token.
	Token string
	Body  []byte
	// MaxResponseBytes bounds the answer read; zero means 1 MiB.
	MaxResponseBytes int
}

// Post makes one call with hc: it posts r.Body as JSON and decodes a 2xx
// answer into out (unless out is nil). A failure that may pass on another
// attempt (no answer, 429, 5xx) is retriable, and Client.Post retries it.
// Errors never contain the request body.
func Post(ctx context.Context, hc *http.Client, r Request, out any) error {
	limit := r.MaxResponseBytes
	if limit <= 0 {
		limit = maxResponseBytes
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	tracing.Inject(ctx, req.Header)
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return errRetriable{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return errRetriable{fmt.Errorf("reading the answer: %w", err)}
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return errRetriable{fmt.Errorf("%s answered %s%s", r.URL, resp.Status, statusMessage(data))}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		// The body of a refusal may be a Status; its message helps.
		return fmt.Errorf("%s answered %s%s", r.URL, resp.Status, statusMessage(data))
	case len(data) > limit:
		return fmt.Errorf("the answer of %s is larger than %d bytes", r.URL, limit)
	}
	if out == nil {
		return nil // the caller wants no answer (an audit webhook)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decoding the answer of %s: %w", r.URL, err)
	}
	return nil
}

// isRetriable reports whether err, from Post, may pass on another attempt.
func isRetriable(err error) bool {
	var r errRetriable
	return errors.As(err, &r)
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
