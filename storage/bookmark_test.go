package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

func TestDeadlineBookmark(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration // 0: no deadline
		fires   bool
	}{
		{"no deadline", 0, false},
		{"a deadline nearer than the lead", time.Second, false},
		{"a deadline past the lead", storage.DeadlineBookmarkLead + 500*time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			start := time.Now()
			due, stop := storage.DeadlineBookmark(ctx)
			defer stop()
			if !tc.fires {
				if due != nil {
					t.Fatal("a bookmark is due; want none")
				}
				return
			}
			select {
			case <-due:
				if d := time.Since(start); d < tc.timeout-storage.DeadlineBookmarkLead-50*time.Millisecond {
					t.Errorf("due after %v; want %v before the deadline, %v in", d, storage.DeadlineBookmarkLead, tc.timeout)
				}
			case <-ctx.Done():
				t.Fatal("the deadline passed before the bookmark was due")
			}
		})
	}
}
