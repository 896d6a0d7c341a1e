// Package ttlcache is a small bounded cache whose entries expire, shared by
// the authentication and authorization caches (tokens, webhook answers).
package ttlcache

import (
	"sync"
	"time"
)

// Cache maps keys to values for a time-to-live each. When it is full, an
// insert first drops expired entries and then, if needed, an eighth of the
// entries at random (map order), so a flood of distinct keys costs
// amortised constant time per insert and never grows the cache past its
// bound. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[K]entry[V]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// New returns a cache of at most max entries (at least 1) using now as its
// clock (nil means time.Now).
func New[K comparable, V any](max int, now func() time.Time) *Cache[K, V] {
	if max < 1 {
		max = 1
	}
	if now == nil {
		now = time.Now
	}
	return &Cache[K, V]{max: max, now: now, entries: map[K]entry[V]{}}
}

// Get returns the live value under k.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		var zero V
		return zero, false
	}
	if !now.Before(e.expires) {
		delete(c.entries, k)
		var zero V
		return zero, false
	}
	return e.v, true
}

// Add stores v under k for ttl; a ttl of zero or less stores nothing.
func (c *Cache[K, V]) Add(k K, v V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, replacing := c.entries[k]; !replacing && len(c.entries) >= c.max {
		c.evict(now)
	}
	c.entries[k] = entry[V]{v: v, expires: now.Add(ttl)}
}

// Len returns the number of entries, live or not yet evicted.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// evict makes room for one entry; c.mu is held.
func (c *Cache[K, V]) evict(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	drop := len(c.entries) - c.max + c.max/8 + 1
	for k := range c.entries {
		if drop <= 0 {
			break
		}
		delete(c.entries, k)
		drop--
	}
}
