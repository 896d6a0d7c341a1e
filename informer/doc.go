// Package informer keeps an in-memory copy of one resource for controllers
// that run inside a server: an Informer lists the resource (page by page,
// at one revision), watches it from the list's revision, and tells its
// handlers of every object added, changed and deleted, in order, from one
// goroutine. Its local store answers reads (by name, in full, or by an
// index of the caller's) without touching storage; Synced closes once the
// first list is in. A watch that ends is started again from the last
// revision seen; when that revision is gone from storage's history (410
// Gone after a compaction) the informer lists again and hands its handlers
// the difference. Failures are retried with a doubling backoff.
//
// It sits above registry (it reads a Store, or anything with its List and
// Watch) and below the controllers that use it: RBAC's index, flow
// control's configuration, the aggregator's APIServices, and a library
// user's own controllers.
package informer
