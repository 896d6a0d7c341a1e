package storage

import (
	"context"
	"time"
)

// DeadlineBookmarkLead is how long before its context's deadline a watch
// that asked for bookmarks gets one, as kube-apiserver's watch cache sends
// it: a client's watch ends at its timeoutSeconds, and one that has just
// been told the latest revision resumes from there, not from its last
// event, which may since have left the window.
const DeadlineBookmarkLead = 2 * time.Second

// DeadlineBookmark returns a channel that receives DeadlineBookmarkLead
// before ctx's deadline, and a function that releases its timer. The
// channel is nil, and never receives, when ctx has no deadline or it is
// nearer than that (kube-apiserver sends no bookmark then either).
func DeadlineBookmark(ctx context.Context) (<-chan time.Time, func()) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, func() {}
	}
	d := time.Until(deadline.Add(-DeadlineBookmarkLead))
	if d <= 0 {
		return nil, func() {}
	}
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}
