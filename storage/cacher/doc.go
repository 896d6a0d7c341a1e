// Package cacher is apikit's watch cache: a storage.Interface in front of
// any backend that serves GET, LIST and WATCH of one resource's keys from
// memory, as kube-apiserver's cacher does. It sits between the registry and
// the backend; the options package puts one in front of each resource when
// --watch-cache is on (see Factory).
//
// # How it works
//
// One backend watch of the resource's prefix, started with the state as
// initial events (a consistent list), feeds an in-memory state and a window
// of recent changes. The state is multi-versioned: each key keeps the
// values the window still needs, so the cache can serve the state at any
// revision from the window's floor to the latest, which makes paged lists
// consistent without copying anything per page. Watchers read the window
// from their own positions; the goroutine applying changes never waits for
// them. The state, the window and the watchers are
// storage/internal/history's, which the memory backend shares; this package
// adds the backend watch, the window's size, consistent reads and what it
// hands to the backend. When the backend watch ends it resumes from the cache's revision;
// when the backend no longer has that revision (compacted), the cache lists
// again, and its watchers end with ErrExpired.
//
// Each cached value has its own storage.Memo (a new one when the value
// changes): the registry keeps the decoded object, its JSON per served
// version and its selectable attributes there, so a value read by a
// thousand lists and watchers is decoded and encoded once. Label and field
// selectors run on those memoized attributes.
//
// Writes go to the backend. GuaranteedUpdate passes the cached value as
// UpdateOptions.Suggestion, which saves the backend a read when the cache
// is current and costs one retry when it is not.
//
// # Consistent reads
//
// A read that asks for the latest data (resourceVersion "") is served by
// the cache once it has seen the backend's current revision, which one
// quorum read (storage.Interface.CurrentRevision) tells; concurrent reads
// share that quorum read. When nothing under the prefix changed, the
// cache learns that the backend's revision moved by asking its backend
// watch for progress (storage.ProgressRequester: an etcd progress
// notification). A cache that has not caught up within the maximum
// revision wait (3 s) hands the read to the backend; so does, after that
// wait, a cache whose backend watches cannot report progress. A backend
// whose progress reports may come before the events they cover (an etcd
// older than 3.4.31, or 3.5 older than 3.5.13: storage.ProgressOrderer)
// gets every consistent read at once, as kube-apiserver's watch cache
// hands them to such an etcd.
//
// A client reads its own writes: a read not older than a revision (a Get
// with MinRevision, a NotOlderThan list) also waits until the cache has
// seen the writes made through it, which costs the delay of the watch, not
// a request to the backend. Kubernetes allows such reads to miss them.
//
// # What is served from where
//
// R is a revision, F the cache's floor (the oldest revision whose state it
// holds: the revision of its last list, or of the oldest change it has
// dropped from its window), C its current revision, W the newest revision
// a write through the cache returned.
//
//	request                          served by                                   at revision
//	Get, no MinRevision              cache, once it has seen the backend's       latest
//	                                 current revision; backend after 3 s
//	Get, MinRevision R               cache once C >= max(R, W) (waits up to      latest
//	                                 3 s); then the backend when it has R,
//	                                 else ErrTooLargeResourceVersion
//	List, resourceVersion ""         as Get without MinRevision                  latest
//	List, "0" (AnyRevision)          cache at once                               C
//	List, R, NotOlderThan            as Get with MinRevision R                   latest
//	  (or no match, no limit)
//	List, R, Exact                   cache when F <= R <= C (waits up to 3 s     R
//	  (or no match, with a limit)    for R > C); backend when R < F (etcd may
//	                                 still have it, or answers ErrExpired)
//	List, continue token at R        as Exact at R: pages are consistent, every  R
//	                                 object exactly once, as of the first page
//	Watch from R > 0                 cache: every change after R; ErrExpired     changes after R
//	                                 (as an ErrorEvent) when the window no
//	                                 longer has them all
//	Watch from 0                     cache: the latest state (a consistent       latest, then changes
//	                                 read) as Added events, then changes
//	Watch, SendInitialEvents,        cache: the latest state once C >= R (a      latest, then changes
//	  not older than R               consistent read for 0) from a snapshot,
//	                                 a Bookmark with InitialEventsEnd, changes;
//	                                 never ErrExpired, however old R is
//	Create, GuaranteedUpdate,        backend
//	Delete, CurrentRevision
//
// Until the first list is in, after the cache lost its revision, and for
// keys outside its prefix, the backend serves everything. Filtered lists
// apply limit to the matching items and have no RemainingItemCount, as
// the backends.
//
// # Watchers
//
// A watch costs one goroutine and a small buffer; a change costs the
// goroutine that applies it one append and one wake-up, whatever the
// number of watchers. A watcher whose consumer leaves its channel full for
// 100 ms (kube-apiserver's dispatch budget) while it is more than a quarter
// of a fixed window (1,000 changes with the dynamic one) behind is closed
// without an event, as kube-apiserver's watch cache closes it, while the
// revision its client resumes from is still in the window: the client
// watches again from the last revision it saw instead of listing again (an
// error would have made a Kubernetes reflector list at once). The check
// costs a change one length test unless a watcher is stalled. A watcher
// that falls out of the window all the same is closed the same way; no
// watcher ever holds up another or the cache.
// Bookmarks go to the watches that asked for them every bookmark interval
// (a minute), at the revision the watch has delivered everything up to,
// and 2 s before the watch's deadline (a client's timeoutSeconds), as
// kube-apiserver's watch cache sends them, so that the client resumes from
// the latest revision (storage.DeadlineBookmark).
//
// # The window
//
// WithCapacity fixes the number of changes kept (--watch-cache-sizes);
// by default it adapts as kube-apiserver's does: every change of the last
// 75 seconds, at least 100 and at most 102400. Memory is bounded by the
// current objects plus the values the window's changes hold. Compact drops
// history explicitly, for callers that compact the backend and want the
// cache to agree.
package cacher
