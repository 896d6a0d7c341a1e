package authn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingTokens authenticates "good-*" tokens, fails "bad", calls
// "broken" an error of its own, and counts calls.
type countingTokens struct {
	calls atomic.Int64
	gate  chan struct{} // when set, calls wait on it
}

func (c *countingTokens) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	c.calls.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	switch {
	case len(token) > 5 && token[:5] == "good-":
		auds, _ := AudiencesFrom(ctx)
		return &Response{User: User{Name: token[5:], Groups: []string{"g"}}, Audiences: auds}, true, nil
	case token == "bad":
		return nil, false, errors.New("token expired")
	}
	return nil, false, nil
}

func TestTokenCache(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	ctx := context.Background()

	t.Run("successes for SuccessTTL, failures for FailureTTL", func(t *testing.T) {
		under := &countingTokens{}
		c := NewTokenCache(under, TokenCacheOptions{SuccessTTL: 10 * time.Second, FailureTTL: 2 * time.Second, Now: clock})
		for range 3 {
			if resp, ok, err := c.AuthenticateToken(ctx, "good-alice"); !ok || err != nil || resp.User.Name != "alice" {
				t.Fatalf("%+v %v %v", resp, ok, err)
			}
			if _, ok, err := c.AuthenticateToken(ctx, "unknown"); ok || err != nil {
				t.Fatalf("unknown: %v %v", ok, err)
			}
		}
		if n := under.calls.Load(); n != 2 {
			t.Errorf("%d calls, want 2", n)
		}
		now = now.Add(3 * time.Second) // failure expired, success not
		c.AuthenticateToken(ctx, "good-alice")
		c.AuthenticateToken(ctx, "unknown")
		if n := under.calls.Load(); n != 3 {
			t.Errorf("%d calls, want 3", n)
		}
		now = now.Add(10 * time.Second)
		c.AuthenticateToken(ctx, "good-alice")
		if n := under.calls.Load(); n != 4 {
			t.Errorf("%d calls after the success expired, want 4", n)
		}
	})

	t.Run("errors cached only when asked", func(t *testing.T) {
		for _, cacheErrors := range []bool{false, true} {
			under := &countingTokens{}
			c := NewTokenCache(under, TokenCacheOptions{SuccessTTL: time.Minute, FailureTTL: time.Minute, CacheErrors: cacheErrors, Now: clock})
			for range 3 {
				if _, ok, err := c.AuthenticateToken(ctx, "bad"); ok || err == nil {
					t.Fatal("the error was lost")
				}
			}
			want := int64(3)
			if cacheErrors {
				want = 1
			}
			if n := under.calls.Load(); n != want {
				t.Errorf("CacheErrors=%v: %d calls, want %d", cacheErrors, n, want)
			}
		}
	})

	t.Run("audiences are part of the key", func(t *testing.T) {
		under := &countingTokens{}
		c := NewTokenCache(under, TokenCacheOptions{SuccessTTL: time.Minute, Now: clock})
		r1, _, _ := c.AuthenticateToken(WithAudiences(ctx, Audiences{"a"}), "good-alice")
		r2, _, _ := c.AuthenticateToken(WithAudiences(ctx, Audiences{"b"}), "good-alice")
		if under.calls.Load() != 2 || r1.Audiences[0] != "a" || r2.Audiences[0] != "b" {
			t.Errorf("calls %d, audiences %v %v", under.calls.Load(), r1.Audiences, r2.Audiences)
		}
	})

	t.Run("each caller gets its own response", func(t *testing.T) {
		c := NewTokenCache(&countingTokens{}, TokenCacheOptions{SuccessTTL: time.Minute, Now: clock})
		r1, _, _ := c.AuthenticateToken(ctx, "good-alice")
		r1.User.Name = "changed"
		if r2, _, _ := c.AuthenticateToken(ctx, "good-alice"); r2.User.Name != "alice" {
			t.Error("a caller's change reached the cache")
		}
	})

	t.Run("keyed by a keyed hash, never the token", func(t *testing.T) {
		c := NewTokenCache(&countingTokens{}, TokenCacheOptions{SuccessTTL: time.Minute, Now: clock}).(*tokenCache)
		c.AuthenticateToken(ctx, "good-alice")
		plain := sha256.Sum256([]byte("good-alice"))
		if _, ok := c.entries.Get(plain); ok {
			t.Error("the cache key is the token's plain hash")
		}
		if _, ok := c.entries.Get(c.keyFor(nil, "good-alice")); !ok || c.entries.Len() != 1 {
			t.Error("the token is not cached under its keyed hash alone")
		}
		if other := NewTokenCache(&countingTokens{}, TokenCacheOptions{}).(*tokenCache); other.keyFor(nil, "x") == c.keyFor(nil, "x") {
			t.Error("two caches share a key: the HMAC key is not random")
		}
		if c.keyFor(Audiences{"ab"}, "c") == c.keyFor(Audiences{"a"}, "bc") {
			t.Error("keys are ambiguous")
		}
	})

	t.Run("bounded", func(t *testing.T) {
		c := NewTokenCache(&countingTokens{}, TokenCacheOptions{SuccessTTL: time.Hour, MaxEntries: 64, Now: clock}).(*tokenCache)
		for i := range 1000 {
			c.AuthenticateToken(ctx, fmt.Sprintf("good-%d", i))
		}
		if n := c.entries.Len(); n > 64 {
			t.Errorf("%d entries, want at most 64", n)
		}
	})

	t.Run("concurrent lookups share one call", func(t *testing.T) {
		under := &countingTokens{gate: make(chan struct{})}
		c := NewTokenCache(under, TokenCacheOptions{SuccessTTL: time.Minute, Now: clock})
		var wg sync.WaitGroup
		var okCount atomic.Int64
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, ok, _ := c.AuthenticateToken(ctx, "good-alice"); ok {
					okCount.Add(1)
				}
			}()
		}
		// Let the goroutines pile up on the one call, then release it.
		deadline := time.Now().Add(5 * time.Second)
		for under.calls.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		close(under.gate)
		wg.Wait()
		if n := under.calls.Load(); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
		if okCount.Load() != 20 {
			t.Errorf("%d of 20 callers authenticated", okCount.Load())
		}
	})

	t.Run("a waiter that gives up", func(t *testing.T) {
		under := &countingTokens{gate: make(chan struct{})}
		c := NewTokenCache(under, TokenCacheOptions{SuccessTTL: time.Minute, Now: clock})
		done := make(chan bool)
		go func() { _, ok, _ := c.AuthenticateToken(ctx, "good-alice"); done <- ok }()
		for under.calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, ok, err := c.AuthenticateToken(cctx, "good-alice"); ok || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled waiter: %v %v", ok, err)
		}
		close(under.gate)
		if !<-done {
			t.Error("the leader failed")
		}
	})
}
