package cacher

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/history"
)

// sync waits until the cache has seen rev or, when rev is 0, everything
// the backend had when sync was called (a consistent read: one quorum read
// of the backend's revision, shared with concurrent callers). With
// ownWrites, a read not older than rev also waits for the writes made
// through the cache, so that a client reads its own writes. delegate is
// true when the cache did not get there in time but the backend has the
// revision, or for a consistent read when the backend's progress cannot be
// trusted: the caller then reads from the backend. A revision the backend
// has not reached either fails with ErrTooLargeResourceVersion.
func (c *Cacher) sync(ctx context.Context, rev int64, ownWrites bool) (delegate bool, err error) {
	consistent := rev == 0
	target := rev
	switch {
	case consistent && !c.progressTrusted():
		// The cache's revision may run ahead of the events it applied:
		// only the backend can answer a consistent read.
		return true, nil
	case consistent:
		if target, err = c.currentRevision(ctx); err != nil {
			return false, err
		}
	case ownWrites:
		target = max(rev, c.written.Load())
	}
	if c.h.Revision() >= target {
		return false, nil
	}
	reached, err := c.waitRev(ctx, target)
	switch {
	case err != nil:
		return false, err
	case reached:
		return false, nil
	case consistent:
		return true, nil
	}
	cur, err := c.currentRevision(ctx)
	if err != nil {
		return false, err
	}
	if rev <= cur {
		return true, nil
	}
	return false, storage.NewTooLargeResourceVersion(rev, cur)
}

// progressTrusted reports whether the backend's watch progress may move the
// cache's revision for a consistent read: not on a backend that says its
// progress reports can come before the events they cover (an etcd older
// than 3.4.31 or 3.5.13), as kube-apiserver's watch cache decides.
func (c *Cacher) progressTrusted() bool {
	po, ok := c.backend.(storage.ProgressOrderer)
	return !ok || po.ProgressOrdered()
}

// waitRev waits up to the configured time for the cache to see rev, asking
// the backend for progress meanwhile. It reports false, without an error,
// when the time passed or the cache lost its state.
func (c *Cacher) waitRev(ctx context.Context, rev int64) (bool, error) {
	reached, err := c.h.WaitRevision(ctx, rev, c.cfg.maxRevisionWait, func() {
		select {
		case c.progressReq <- struct{}{}:
		default:
		}
	})
	switch {
	case errors.Is(err, history.ErrClosed):
		return false, errClosed()
	case err != nil:
		return false, fmt.Errorf("watch cache: waiting for revision %d: %w", rev, err)
	}
	return reached, nil
}

// revCall is one quorum read of the backend's revision, shared by the
// callers that joined it before it started.
type revCall struct {
	done chan struct{}
	rev  int64
	err  error
}

// currentRevision returns the backend's current revision from a quorum
// read that started after the call: concurrent callers share one read, so
// that a burst of consistent reads costs the backend one request.
func (c *Cacher) currentRevision(ctx context.Context) (int64, error) {
	c.revMu.Lock()
	if c.revClosed {
		c.revMu.Unlock()
		return 0, errClosed()
	}
	call := c.revNext
	if call == nil {
		call = &revCall{done: make(chan struct{})}
		c.revNext = call
	}
	if !c.revRunning {
		c.revRunning = true
		c.wg.Add(1)
		go c.revisionLoop()
	}
	c.revMu.Unlock()
	select {
	case <-call.done:
		return call.rev, call.err
	case <-ctx.Done():
		return 0, fmt.Errorf("watch cache: reading the current revision: %w", ctx.Err())
	case <-c.ctx.Done():
		return 0, errClosed()
	}
}

// revisionLoop runs the shared quorum reads one after the other, and
// returns when none is asked for: currentRevision starts it again.
func (c *Cacher) revisionLoop() {
	defer c.wg.Done()
	for {
		// Readers that are runnable now join this read rather than the
		// next: under load a read serves ~6 GETs instead of ~5, which is
		// etcd's CPU and the gRPC client's.
		runtime.Gosched()
		c.revMu.Lock()
		call := c.revNext
		c.revNext = nil
		if call == nil {
			c.revRunning = false
			c.revMu.Unlock()
			return
		}
		c.revMu.Unlock()
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		call.rev, call.err = c.backend.CurrentRevision(ctx)
		cancel()
		close(call.done)
	}
}

// progressLoop asks the backend watch for progress while reads wait for a
// revision the cache has not seen: the answer moves the cache's revision
// even when nothing under its prefix changed. With a dynamic window it
// also ages the window every second when no change comes to do it (one
// goroutine for both: a server has a cache per resource).
func (c *Cacher) progressLoop() {
	defer c.wg.Done()
	var tick <-chan time.Time
	if c.cfg.capacity == 0 {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	retry := time.NewTimer(progressRetry)
	retry.Stop()
	defer retry.Stop()
	delay := firstProgressRetry
	for {
		select {
		case <-tick:
			c.h.Lock()
			c.evictLocked(c.h.Now())
			c.h.Unlock()
			continue
		case <-c.progressReq:
			delay = firstProgressRetry
		case <-retry.C:
			delay = min(2*delay, progressRetry)
		case <-c.ctx.Done():
			return
		}
		if c.h.Waiting() == 0 {
			continue
		}
		c.bwMu.Lock()
		pr := c.backendWatch
		c.bwMu.Unlock()
		if pr != nil {
			if err := pr.RequestProgress(c.ctx); err != nil && c.ctx.Err() == nil {
				c.cfg.logger.Debug("watch cache: requesting progress", "prefix", c.root, "err", err)
			}
		}
		retry.Reset(delay)
	}
}

// delegateGet, delegateList and delegateWatch serve a read from the
// backend, counting it.
func (c *Cacher) delegateGet(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	c.delegated.Add(1)
	return c.backend.Get(ctx, key, opts)
}

func (c *Cacher) delegateList(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	c.delegated.Add(1)
	return c.backend.List(ctx, prefix, opts)
}

func (c *Cacher) delegateWatch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	c.delegated.Add(1)
	return c.backend.Watch(ctx, prefix, opts)
}

// Get implements storage.Interface. The value is the cache's once it has
// seen opts.MinRevision or, without one, the backend's current revision.
func (c *Cacher) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	if err := ctx.Err(); err != nil {
		return storage.KeyValue{}, err
	}
	if c.isClosed() {
		return storage.KeyValue{}, errClosed()
	}
	if !c.h.Ready() || !c.covers(key) {
		return c.delegateGet(ctx, key, opts)
	}
	delegate, err := c.sync(ctx, opts.MinRevision, true)
	if err != nil {
		return storage.KeyValue{}, err
	}
	if delegate {
		return c.delegateGet(ctx, key, opts)
	}
	v, rev, ok, ready := c.h.Latest(key)
	switch {
	case !ready:
		return c.delegateGet(ctx, key, opts)
	case ok:
		return v.KeyValue(key, rev), nil
	case opts.IgnoreNotFound:
		return storage.KeyValue{}, nil
	default:
		return storage.KeyValue{}, storage.NewNotFound(key)
	}
}

// List implements storage.Interface; see the package documentation for
// which lists the cache serves.
func (c *Cacher) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.ListResult{}, err
	}
	if c.isClosed() {
		return storage.ListResult{}, errClosed()
	}
	prefix = storage.ListPrefix(prefix)
	if !c.h.Ready() || !c.covers(prefix) {
		return c.delegateList(ctx, prefix, opts)
	}
	plan, err := storage.PlanList(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	start, rev := plan.Start, plan.Revision // rev 0: the latest
	var delegate bool
	switch {
	case plan.NotOlderThan > 0:
		delegate, err = c.sync(ctx, plan.NotOlderThan, true)
	case plan.Consistent:
		delegate, err = c.sync(ctx, 0, false)
	case rev > 0:
		delegate, err = c.sync(ctx, rev, false)
	}
	if err != nil {
		return storage.ListResult{}, err
	}
	if !delegate {
		res, ok, err := c.h.List(prefix, start, rev, opts.Limit, opts.Predicate)
		if err == nil && ok {
			c.metrics.Listed(len(res.Items))
		}
		if err != nil || ok {
			return res, err
		}
	}
	// The cache no longer holds that revision (or lost its state): etcd
	// may still have it.
	return c.delegateList(ctx, prefix, opts)
}
