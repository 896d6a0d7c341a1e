// Package memory is a storage.Interface kept in process memory, with the
// same semantics as the etcd backends: one store-wide revision counter,
// multi-version history per key (so lists at an exact past revision and
// paged lists at one consistent revision work), compaction, and watches
// that resume from any retained revision.
//
// It is the store of throwaway servers and tests, where it replaces the
// embedded etcd: nothing survives the process.
//
// History is bounded the way kube-apiserver bounds etcd's: every
// compaction interval (default five minutes) the store drops the history
// older than the revision it had one interval earlier; a running watch
// keeps the changes it has not read yet, as etcd keeps them for a watch
// that has caught up. Writers never wait for watchers: each watcher reads
// the log of writes from its own position, and one whose consumer leaves
// its channel full for 100 ms while more than its buffer (WithWatchBuffer)
// behind is closed without an error, as kube-apiserver's watch cache closes
// it, so that its client watches again from the last revision it got.
//
// The records, the log, the revision waiters and the watchers are
// storage/internal/history's, which the watch cache (storage/cacher) shares;
// this package adds the revision counter, the writes and the compaction
// interval.
package memory
