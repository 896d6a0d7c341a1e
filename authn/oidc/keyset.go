package oidc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// maxDocumentBytes bounds a discovery document or JWKS.
const maxDocumentBytes = 1 << 20

// remoteKeySet fetches and caches an issuer's signing keys.
type remoteKeySet struct {
	issuer       string
	discoveryURL string
	client       *http.Client
	maxAge       time.Duration
	minRefetch   time.Duration
	now          func() time.Time

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetchedAt time.Time     // of the keys in use
	triedAt   time.Time     // of the last fetch, successful or not
	inflight  chan struct{} // closed when the fetch under way ends
	lastErr   error
}

// discovery is the part of an OpenID provider's discovery document that
// matters here.
type discovery struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// keysFor returns the cached keys that may have signed a token with kid
// and alg. It fetches the key set when there is none yet or it is older
// than maxAge, and when no cached key matches (unless the last fetch was
// less than minRefetch ago).
func (s *remoteKeySet) keysFor(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	s.mu.Lock()
	stale := s.keys == nil || s.now().Sub(s.fetchedAt) > s.maxAge
	matching := matchKeys(s.keys, kid, alg)
	s.mu.Unlock()
	if !stale && len(matching) > 0 {
		return matching, nil
	}
	if err := s.refresh(ctx); err != nil && len(matching) == 0 {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	matching = matchKeys(s.keys, kid, alg)
	if len(matching) == 0 {
		return nil, fmt.Errorf("no key of issuer %s matches the token's key ID %q", s.issuer, kid)
	}
	return matching, nil
}

// refresh fetches the keys unless the last attempt, successful or not, was
// less than minRefetch ago; concurrent callers share one fetch.
func (s *remoteKeySet) refresh(ctx context.Context) error {
	s.mu.Lock()
	if s.inflight == nil {
		if !s.triedAt.IsZero() && s.now().Sub(s.triedAt) < s.minRefetch {
			err := s.lastErr
			s.mu.Unlock()
			return err
		}
		done := make(chan struct{})
		s.inflight = done
		s.triedAt = s.now()
		s.mu.Unlock()
		keys, err := s.fetch(context.WithoutCancel(ctx))
		s.mu.Lock()
		s.inflight, s.lastErr = nil, err
		if err == nil {
			s.keys, s.fetchedAt = keys, s.now()
		} else {
			slog.Warn("fetching the signing keys of a JWT issuer failed; keeping the ones cached", "issuer", s.issuer, "err", err)
		}
		s.mu.Unlock()
		close(done)
		return err
	}
	done := s.inflight
	s.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// fetch reads the discovery document, checks that it is the issuer's, and
// reads the key set it names.
func (s *remoteKeySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var d discovery
	if err := s.getJSON(ctx, s.discoveryURL, &d); err != nil {
		return nil, fmt.Errorf("discovery document: %w", err)
	}
	if d.Issuer != s.issuer {
		return nil, fmt.Errorf("discovery document names issuer %q, want %q", d.Issuer, s.issuer)
	}
	u, err := url.Parse(d.JWKSURI)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("discovery document: jwks_uri %q is not an https URL", d.JWKSURI)
	}
	var set jose.JSONWebKeySet
	if err := s.getJSON(ctx, d.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, k := range set.Keys {
		// Only public signing keys: a symmetric or private key in a
		// published set is a mistake, and must not verify anything.
		if k.Use != "" && k.Use != "sig" || !k.Valid() || !k.IsPublic() || isSymmetric(k) {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("key set at %s holds no public signing keys", d.JWKSURI)
	}
	return keys, nil
}

func isSymmetric(k jose.JSONWebKey) bool {
	_, ok := k.Key.([]byte)
	return ok
}

func (s *remoteKeySet) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", u, err)
	}
	if len(body) > maxDocumentBytes {
		return fmt.Errorf("%s: larger than %d bytes", u, maxDocumentBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	return nil
}

// matchKeys returns the keys that may have signed a token: those with its
// key ID (all, when it names none) whose algorithm, if they state one, is
// the token's.
func matchKeys(keys []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if k.Algorithm != "" && !strings.EqualFold(k.Algorithm, alg) {
			continue
		}
		out = append(out, k)
	}
	return out
}
