package memory

import (
	"context"

	"github.com/apikit-dev/apikit/storage"
)

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.ListResult{}, err
	}
	prefix = storage.ListPrefix(prefix)
	plan, err := storage.PlanList(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	if plan.NotOlderThan > 0 {
		if err := s.waitForRevision(ctx, plan.NotOlderThan); err != nil {
			return storage.ListResult{}, err
		}
	}
	if s.closed.Load() {
		return storage.ListResult{}, errClosed()
	}
	res, ok, err := s.h.List(prefix, plan.Start, plan.Revision, opts.Limit, opts.Predicate)
	if ok || err != nil {
		return res, err
	}
	// The store does not hold the revision (any more, or yet).
	rev := plan.Revision
	s.h.RLock()
	floor, _ := s.h.FloorsLocked()
	cur := s.h.RevisionLocked()
	s.h.RUnlock()
	switch {
	case rev < floor && plan.Continued:
		return storage.ListResult{}, storage.NewContinueExpired(plan, prefix, storage.NewExpired(rev, floor))
	case rev < floor:
		return storage.ListResult{}, storage.NewExpired(rev, floor)
	default:
		return storage.ListResult{}, storage.NewTooLargeResourceVersion(rev, cur)
	}
}
