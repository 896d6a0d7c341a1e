// Package history is the versioned history that the in-memory stores share:
// storage/memory (the whole store) and storage/cacher (the watch cache of
// one resource). One History holds
//
//   - per-key records: every value a key had that a read at a retained
//     revision can still see (a delete is a version too, a tombstone), in a
//     map for point reads and a key-sorted index for lists, which also
//     counts the keys that exist at the latest revision in any key range
//     (a page's RemainingItemCount, without walking the rest);
//   - a change log, numbered by sequence, that watchers read from their
//     own cursors, trimmed by the owner's policy (memory compacts to a
//     revision on an interval, the cache keeps a window of changes) with the
//     records' old versions going along;
//   - revision waiters: reads of a revision the history has not reached
//     sleep until it does, or a deadline passes;
//   - the watcher loop: initial events from a snapshot, a cursor over the
//     log with predicate filtering (an object that starts or stops matching
//     is Added or Deleted), periodic, deadline and requested bookmarks, and
//     the closing of a watcher whose consumer stalls while far behind.
//
// The History is generic over what a version holds (Value): memory keeps
// its values inline in the records and the log (no allocation per write
// beyond the bytes), the cache keeps pointers to values that its records,
// its window and its watchers share. Either way a value gives the encoded
// bytes and the storage.Memo; the revisions and tombstone flags are the
// history's own, beside the values, so that reads and compaction walk them
// without calling into the owner's type.
//
// Writers never wait for watchers: a change costs one append to the log and
// one wake-up of the watchers of each prefix of its key; each watcher's own
// goroutine copies the changes it has not sent yet out of the log.
//
// # Locking
//
// A History is guarded by its embedded RWMutex, which its owner also uses
// for its own state (a memory store's revision counter, a cache's
// readiness): methods whose names end in Locked need it held (for writing
// when they change anything), the others take it themselves.
//
// # Why storage/etcd3 does not use it
//
// An etcd watch is a stream that etcd delivers, one per consumer: the etcd3
// watcher forwards what the stream sends, reads its initial state from etcd
// in pages, and its bookmarks follow etcd's progress notifications. There
// is no shared log to read from a cursor, no window to fall out of and no
// writer to protect from a slow consumer (etcd's gRPC flow control holds
// the stream instead), so the cursor loop here has nothing to read there,
// and a log fed from the stream only to be read back would cost a copy of
// every event. What is left to share, filtering a change by a predicate,
// is storage.Predicate.FilterEvent, which etcd3 uses (its values come fresh
// from etcd, without memos); the watchers here filter with the memos of
// both versions instead, so that neither is decoded again.
package history
