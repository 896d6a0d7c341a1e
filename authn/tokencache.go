package authn

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/internal/ttlcache"
)

// TokenCacheOptions configure NewTokenCache.
type TokenCacheOptions struct {
	// SuccessTTL is how long an authenticated token is remembered;
	// FailureTTL how long a refused one is. Zero does not cache that
	// outcome. kube-apiserver remembers successes for 10 s in front of
	// its token authenticators, and both outcomes for
	// --authentication-token-webhook-cache-ttl (2 m) in front of a webhook.
	SuccessTTL, FailureTTL time.Duration
	// CacheErrors also caches failures that are errors (an expired token)
	// for FailureTTL, not only tokens nobody recognised. Errors of the
	// authenticator itself (a webhook that is down) should not be cached,
	// so a webhook cache leaves this off.
	CacheErrors bool
	// MaxEntries bounds the cache; 0 means 4096.
	MaxEntries int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewTokenCache remembers what t said about each token for a while, so
// that a client sending one token many times costs one verification (a
// signature check, a webhook call) per TTL. Entries are keyed by an HMAC
// of the token (and the audiences asked for) under a key made at random
// for this cache, never by the token itself: the cache holds nothing a
// memory dump could replay. Concurrent lookups of one uncached token share
// one call to t.
func NewTokenCache(t TokenAuthenticator, o TokenCacheOptions) TokenAuthenticator {
	if o.MaxEntries <= 0 {
		o.MaxEntries = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("authn: no randomness for the token cache key: " + err.Error())
	}
	c := &tokenCache{t: t, o: o, entries: ttlcache.New[[sha256.Size]byte, cacheEntry](o.MaxEntries, o.Now), inflight: map[[sha256.Size]byte]*cacheCall{}}
	c.macs.New = func() any { return hmac.New(sha256.New, key) }
	return c
}

type cacheEntry struct {
	resp *Response
	ok   bool
	err  error
}

type cacheCall struct {
	done chan struct{}
	resp *Response
	ok   bool
	err  error
}

type tokenCache struct {
	t    TokenAuthenticator
	o    TokenCacheOptions
	macs sync.Pool // hash.Hash keyed with the cache's secret

	entries *ttlcache.Cache[[sha256.Size]byte, cacheEntry]

	mu       sync.Mutex
	inflight map[[sha256.Size]byte]*cacheCall
}

// keyFor is the HMAC of the audiences and the token, each length-prefixed
// so that no two (audiences, token) pairs share an input.
func (c *tokenCache) keyFor(auds Audiences, token string) [sha256.Size]byte {
	mac := c.macs.Get().(hash.Hash)
	mac.Reset()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(auds)))
	mac.Write(n[:])
	for _, a := range auds {
		binary.BigEndian.PutUint64(n[:], uint64(len(a)))
		mac.Write(n[:])
		mac.Write([]byte(a))
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(token)))
	mac.Write(n[:])
	mac.Write([]byte(token))
	var k [sha256.Size]byte
	mac.Sum(k[:0])
	c.macs.Put(mac)
	return k
}

// AuthenticateToken implements TokenAuthenticator.
func (c *tokenCache) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	auds, _ := AudiencesFrom(ctx)
	k := c.keyFor(auds, token)
	if e, found := c.entries.Get(k); found {
		return copyResponse(e.resp), e.ok, e.err
	}

	c.mu.Lock()
	call, leader := c.inflight[k], false
	if call == nil {
		call, leader = &cacheCall{done: make(chan struct{})}, true
		c.inflight[k] = call
	}
	c.mu.Unlock()

	if leader {
		c.lead(ctx, k, call, token)
	} else {
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	return copyResponse(call.resp), call.ok, call.err
}

// lead makes the call others wait for. The call is shared: one caller
// giving up must not fail the others, so it runs without the leader's
// cancellation. Should t panic, the waiters are released (unauthenticated)
// and the panic goes on up the leader's stack.
func (c *tokenCache) lead(ctx context.Context, k [sha256.Size]byte, call *cacheCall, token string) {
	completed := false
	defer func() {
		// Store before leaving inflight, so that no caller finds neither.
		if completed {
			c.store(k, call)
		}
		c.mu.Lock()
		delete(c.inflight, k)
		c.mu.Unlock()
		close(call.done)
	}()
	call.resp, call.ok, call.err = c.t.AuthenticateToken(context.WithoutCancel(ctx), token)
	completed = true
}

// store caches a result for the TTL of its outcome.
func (c *tokenCache) store(k [sha256.Size]byte, r *cacheCall) {
	ttl := c.o.FailureTTL
	if r.ok {
		ttl = c.o.SuccessTTL
	} else if r.err != nil && !c.o.CacheErrors {
		return
	}
	c.entries.Add(k, cacheEntry{resp: r.resp, ok: r.ok, err: r.err}, ttl)
}

// copyResponse gives each caller its own Response, so that one request's
// changes to it (the filter adds system:authenticated) reach no other. The
// user's groups and extra are shared and must be treated as read-only.
func copyResponse(r *Response) *Response {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}
