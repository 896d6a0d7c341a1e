package cacher

import (
	"context"

	"github.com/apikit-dev/apikit/storage"
)

// Create implements storage.Interface: the backend writes; the cache learns
// of it through its watch.
func (c *Cacher) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if c.isClosed() {
		return 0, errClosed()
	}
	rev, err := c.backend.Create(ctx, key, value)
	if err == nil {
		c.wrote(key, rev)
	}
	return rev, err
}

// wrote records the revision of a write through the cache.
func (c *Cacher) wrote(key string, rev int64) {
	if !c.covers(key) {
		return
	}
	for {
		cur := c.written.Load()
		if rev <= cur || c.written.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// GuaranteedUpdate implements storage.Interface: the backend writes, and
// its first attempt starts from the cache's value of the key (as
// opts.Suggestion, unless the caller gave one) rather than a read. A stale
// value costs the backend one retry.
func (c *Cacher) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.KeyValue, error) {
	if c.isClosed() {
		return storage.KeyValue{}, errClosed()
	}
	if opts.Suggestion.Key == "" && c.h.Ready() && c.covers(key) {
		if v, rev, ok, _ := c.h.Latest(key); ok {
			opts.Suggestion = v.KeyValue(key, rev)
		}
	}
	kv, err := c.backend.GuaranteedUpdate(ctx, key, opts, tryUpdate)
	if err == nil {
		c.wrote(key, kv.Revision)
	}
	return kv, err
}

// Delete implements storage.Interface: the backend deletes.
func (c *Cacher) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.KeyValue, error) {
	if c.isClosed() {
		return storage.KeyValue{}, errClosed()
	}
	kv, err := c.backend.Delete(ctx, key, opts)
	if err == nil {
		c.wrote(key, kv.Revision)
	}
	return kv, err
}

// CurrentRevision implements storage.Interface: a quorum read of the
// backend, shared by concurrent callers (each gets a read that started
// after it called).
func (c *Cacher) CurrentRevision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if c.isClosed() {
		return 0, errClosed()
	}
	return c.currentRevision(ctx)
}
