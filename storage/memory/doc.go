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
// older than the revision it had one interval earlier. Watches are fed by
// writers without ever making them wait: a watcher that falls more than its
// buffer behind is ended with an ErrorEvent, and its client watches again.
package memory
