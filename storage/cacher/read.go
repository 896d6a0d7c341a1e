package cacher

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/storage"
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
	if c.rev.Load() >= target {
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
	c.revWaiters.Add(1)
	defer c.revWaiters.Add(-1)
	select {
	case c.progressReq <- struct{}{}:
	default:
	}
	timer := time.NewTimer(c.cfg.maxRevisionWait)
	defer timer.Stop()
	for {
		c.mu.RLock()
		seen, wake := c.seen, c.revWake
		c.mu.RUnlock()
		if !c.ready.Load() {
			return false, nil
		}
		if seen >= rev {
			return true, nil
		}
		select {
		case <-wake:
		case <-timer.C:
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("watch cache: waiting for revision %d: %w", rev, ctx.Err())
		case <-c.ctx.Done():
			return false, errClosed()
		}
	}
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
	call := c.revNext
	if call == nil {
		call = &revCall{done: make(chan struct{})}
		c.revNext = call
	}
	c.revMu.Unlock()
	select {
	case c.revReq <- struct{}{}:
	default:
	}
	select {
	case <-call.done:
		return call.rev, call.err
	case <-ctx.Done():
		return 0, fmt.Errorf("watch cache: reading the current revision: %w", ctx.Err())
	case <-c.ctx.Done():
		return 0, errClosed()
	}
}

// revisionLoop runs the shared quorum reads one after the other.
func (c *Cacher) revisionLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.revReq:
		case <-c.ctx.Done():
			return
		}
		// Readers that are runnable now join this read rather than the
		// next: under load a read serves ~6 GETs instead of ~5, which is
		// etcd's CPU and the gRPC client's.
		runtime.Gosched()
		c.revMu.Lock()
		call := c.revNext
		c.revNext = nil
		c.revMu.Unlock()
		if call == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		call.rev, call.err = c.backend.CurrentRevision(ctx)
		cancel()
		close(call.done)
	}
}

// progressLoop asks the backend watch for progress while reads wait for a
// revision the cache has not seen: the answer moves the cache's revision
// even when nothing under its prefix changed.
func (c *Cacher) progressLoop() {
	defer c.wg.Done()
	retry := time.NewTimer(progressRetry)
	retry.Stop()
	delay := firstProgressRetry
	for {
		select {
		case <-c.progressReq:
			delay = firstProgressRetry
		case <-retry.C:
			delay = min(2*delay, progressRetry)
		case <-c.ctx.Done():
			retry.Stop()
			return
		}
		if c.revWaiters.Load() == 0 {
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
	if !c.ready.Load() || !c.covers(key) {
		return c.delegateGet(ctx, key, opts)
	}
	delegate, err := c.sync(ctx, opts.MinRevision, true)
	if err != nil {
		return storage.KeyValue{}, err
	}
	if delegate {
		return c.delegateGet(ctx, key, opts)
	}
	c.mu.RLock()
	ready := c.ready.Load()
	v := c.records[key].latest()
	c.mu.RUnlock()
	switch {
	case !ready:
		return c.delegateGet(ctx, key, opts)
	case v != nil:
		return storage.KeyValue{Key: key, Value: v.value, Revision: v.rev, Memo: v.memo}, nil
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
	if !c.ready.Load() || !c.covers(prefix) {
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
		var res storage.ListResult
		if opts.Predicate.Empty() {
			res, delegate, err = c.list(prefix, start, rev, opts.Limit)
		} else {
			res, delegate, err = c.listFiltered(prefix, start, rev, opts)
		}
		if err != nil || !delegate {
			return res, err
		}
	}
	// The cache no longer holds that revision (or lost its state): etcd
	// may still have it.
	return c.delegateList(ctx, prefix, opts)
}

// readableLocked returns the revision a read at rev (0: the latest) is
// served at, false when the cache cannot serve it. The caller holds c.mu.
func (c *Cacher) readableLocked(rev int64) (int64, bool) {
	switch {
	case !c.ready.Load():
		return 0, false
	case rev == 0:
		return c.seen, true
	case rev < c.floor || rev > c.seen:
		return 0, false
	}
	return rev, true
}

// list serves an unfiltered list at rev from start; delegate is true when
// the cache cannot.
func (c *Cacher) list(prefix, start string, rev, limit int64) (res storage.ListResult, delegate bool, err error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	rev, ok := c.readableLocked(rev)
	if !ok {
		return res, true, nil
	}
	res.Revision = rev
	switch {
	case limit > 0:
		res.Items = make([]storage.KeyValue, 0, min(limit, int64(c.live)))
	case prefix == c.root && rev == c.seen:
		res.Items = make([]storage.KeyValue, 0, c.live)
	default:
		// Counting first costs a walk of the index; growing the slice
		// would cost twice its size in allocations, and the collector's
		// time with them.
		n := 0
		for rec := range c.index.From(start) {
			if !strings.HasPrefix(rec.key, prefix) {
				break
			}
			if rec.at(rev) != nil {
				n++
			}
		}
		res.Items = make([]storage.KeyValue, 0, n)
	}
	more := false
	var remaining int64
	for rec := range c.index.From(start) {
		if !strings.HasPrefix(rec.key, prefix) {
			break
		}
		v := rec.at(rev)
		switch {
		case v == nil:
		case more:
			remaining++ // past a full page: count the rest
		case limit > 0 && int64(len(res.Items)) == limit:
			more, remaining = true, 1
		default:
			res.Items = append(res.Items, storage.KeyValue{Key: rec.key, Value: v.value, Revision: v.rev, Memo: v.memo})
		}
	}
	if more {
		if res.Continue, err = storage.EncodeContinue(res.Items[len(res.Items)-1].Key, prefix, rev); err != nil {
			return storage.ListResult{}, false, fmt.Errorf("encoding continue token: %w", err)
		}
		res.RemainingItemCount = &remaining
	}
	return res, false, nil
}

// filterChunk is how many candidates a filtered list collects per hold of
// the lock: the predicate runs without it, since the first match of a new
// value decodes it.
const filterChunk = 1024

// listFiltered serves a filtered list at rev from start; delegate is true
// when the cache cannot.
func (c *Cacher) listFiltered(prefix, start string, rev int64, opts storage.ListOptions) (res storage.ListResult, delegate bool, err error) {
	limit := opts.Limit
	if limit > 0 {
		res.Items = make([]storage.KeyValue, 0, min(limit, 1024))
	}
	var chunk []storage.KeyValue
	key := start
	more := false
	for {
		c.mu.RLock()
		r, ok := c.readableLocked(rev)
		if !ok {
			c.mu.RUnlock()
			return storage.ListResult{}, true, nil
		}
		rev = r
		chunk = chunk[:0]
		for rec := range c.index.From(key) {
			if !strings.HasPrefix(rec.key, prefix) || len(chunk) == filterChunk {
				break
			}
			if v := rec.at(rev); v != nil {
				chunk = append(chunk, storage.KeyValue{Key: rec.key, Value: v.value, Revision: v.rev, Memo: v.memo})
			}
		}
		c.mu.RUnlock()
		for _, kv := range chunk {
			if limit > 0 && int64(len(res.Items)) == limit {
				more = true
				break
			}
			match, err := opts.Predicate.Matches(kv.Value, kv.Memo)
			if err != nil {
				return storage.ListResult{}, false, fmt.Errorf("filtering %q: %w", kv.Key, err)
			}
			if match {
				res.Items = append(res.Items, kv)
			}
		}
		if more || len(chunk) < filterChunk {
			break
		}
		key = chunk[len(chunk)-1].Key + "\x00"
	}
	res.Revision = rev
	if more {
		if res.Continue, err = storage.EncodeContinue(res.Items[len(res.Items)-1].Key, prefix, rev); err != nil {
			return storage.ListResult{}, false, fmt.Errorf("encoding continue token: %w", err)
		}
	}
	return res, false, nil
}
