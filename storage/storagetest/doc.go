// Package storagetest is the conformance suite every storage.Interface
// backend runs: memory, etcd3 and embedded today, and any backend or caching
// layer written later. It pins down the Kubernetes semantics the registry
// relies on: revisions, preconditions, optimistic concurrency, paged and
// filtered lists at a consistent revision, watches that resume from a
// revision, and 410 Gone after compaction.
//
// A backend's test calls Run with a Factory:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, storagetest.Factory{
//			New:     func(t *testing.T) storage.Interface { return memory.New() },
//			Compact: func(ctx context.Context, s storage.Interface, rev int64) error { return s.(*memory.Store).Compact(rev) },
//		})
//	}
//
// The suite never assumes that revisions start at a given number or grow by
// one per write: several stores may share one etcd, whose revision counter is
// global.
package storagetest
