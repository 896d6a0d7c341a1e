package memory

import (
	"context"
	"errors"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/internal/history"
)

// Watch implements storage.Interface. Its watchers implement
// storage.ProgressRequester: a Bookmark at the store's revision once they
// have sent everything up to it.
func (s *Store) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prefix = storage.ListPrefix(prefix)
	if opts.SendInitialEvents && opts.Revision > 0 {
		// The state sent is not older than the revision: wait for the
		// store to reach it, as a list would.
		if err := s.waitForRevision(ctx, opts.Revision); err != nil {
			return nil, err
		}
	}
	if s.closed.Load() {
		return nil, errClosed()
	}
	w, err := s.h.Watch(ctx, prefix, opts)
	if errors.Is(err, history.ErrClosed) {
		return nil, errClosed()
	}
	return w, err
}
