package memory

import (
	"context"
	"fmt"
	"strings"

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
	start, rev := plan.Start, plan.Revision // rev 0: the latest

	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return storage.ListResult{}, errClosed()
	}
	switch {
	case rev == 0:
		rev = s.rev
	case rev < s.compacted && plan.Continued:
		return storage.ListResult{}, storage.NewContinueExpired(plan, prefix, storage.NewExpired(rev, s.compacted))
	case rev < s.compacted:
		return storage.ListResult{}, storage.NewExpired(rev, s.compacted)
	case rev > s.rev:
		return storage.ListResult{}, storage.NewTooLargeResourceVersion(rev, s.rev)
	}

	res := storage.ListResult{Revision: rev}
	filtered := !opts.Predicate.Empty()
	switch {
	case opts.Limit > 0:
		res.Items = make([]storage.KeyValue, 0, min(opts.Limit, 1024))
	case !filtered:
		// Counting first costs a walk of the index; growing the slice
		// would cost twice its size in garbage.
		n := 0
		for rec := range s.keys.From(start) {
			if !strings.HasPrefix(rec.key, prefix) {
				break
			}
			if _, ok := rec.at(rev); ok {
				n++
			}
		}
		res.Items = make([]storage.KeyValue, 0, n)
	}
	more := false
	var remaining int64
	for rec := range s.keys.From(start) {
		if !strings.HasPrefix(rec.key, prefix) {
			break
		}
		v, ok := rec.at(rev)
		if !ok {
			continue
		}
		if more {
			// Past a full page of an unfiltered list: count the rest.
			remaining++
			continue
		}
		if opts.Limit > 0 && int64(len(res.Items)) == opts.Limit {
			more, remaining = true, 1
			if filtered {
				break // a filtered list's RemainingItemCount is unknown
			}
			continue
		}
		if filtered {
			match, err := opts.Predicate.Matches(v.value, v.memo)
			if err != nil {
				return storage.ListResult{}, fmt.Errorf("filtering %q: %w", rec.key, err)
			}
			if !match {
				continue
			}
		}
		res.Items = append(res.Items, kv(rec.key, v))
	}
	if !more {
		return res, nil
	}
	last := res.Items[len(res.Items)-1].Key
	token, err := storage.EncodeContinue(last, prefix, rev)
	if err != nil {
		return storage.ListResult{}, fmt.Errorf("encoding continue token: %w", err)
	}
	res.Continue = token
	if !filtered {
		res.RemainingItemCount = &remaining
	}
	return res, nil
}
