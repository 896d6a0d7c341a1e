package memory

import (
	"context"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

const testBookmarkInterval = 200 * time.Millisecond

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Factory{
		New: func(*testing.T) storage.Interface {
			return New(WithBookmarkInterval(testBookmarkInterval), WithMaxRevisionWait(time.Second))
		},
		Compact: func(_ context.Context, s storage.Interface, rev int64) error {
			return s.(*Store).Compact(rev)
		},
		BookmarkInterval: testBookmarkInterval,
		SlowWatchers: func(*testing.T) (storage.Interface, int) {
			// Closed once its consumer leaves buffer changes unread past
			// the one it waits to send and its channel's.
			const buffer = 20
			return New(WithBookmarkInterval(testBookmarkInterval), WithMaxRevisionWait(time.Second), WithWatchBuffer(buffer)), buffer + 1 + outBuffer
		},
	})
}
