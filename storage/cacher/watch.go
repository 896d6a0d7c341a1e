package cacher

import (
	"context"
	"errors"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/history"
)

// outBuffer is the capacity of a watch's result channel.
const outBuffer = 16

// watcher is one watch served by the cache. It hides the history watcher's
// RequestProgress: the cache's revision may trail its backend's, and a
// consumer asking for progress wants the backend's.
type watcher struct{ w *history.Watcher[*value] }

// ResultChan implements storage.Watcher.
func (w watcher) ResultChan() <-chan storage.Event { return w.w.ResultChan() }

// Stop implements storage.Watcher. It returns once the channel is closed.
func (w watcher) Stop() { w.w.Stop() }

// Watch implements storage.Interface; see the package documentation for
// what the cache serves.
func (c *Cacher) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.isClosed() {
		return nil, errClosed()
	}
	prefix = storage.ListPrefix(prefix)
	if !c.h.Ready() || !c.covers(prefix) {
		return c.delegateWatch(ctx, prefix, opts)
	}
	if rev := opts.Revision; rev == 0 || opts.SendInitialEvents {
		// The state sent first is the latest (a consistent read), or one
		// not older than a revision the cache may not have reached yet,
		// with the writes made through the cache, as a NotOlderThan list.
		delegate, err := c.sync(ctx, rev, rev > 0)
		if err != nil {
			return nil, err
		}
		if delegate {
			return c.delegateWatch(ctx, prefix, opts)
		}
	}
	w, err := c.h.Watch(ctx, prefix, opts)
	switch {
	case errors.Is(err, history.ErrNotReady):
		return c.delegateWatch(ctx, prefix, opts)
	case errors.Is(err, history.ErrClosed):
		return nil, errClosed()
	case err != nil:
		return nil, err
	}
	return watcher{w}, nil
}
