// Package etcdtest runs a real etcd server process for tests.
//
// Start finds an etcd binary, starts it on 127.0.0.1 with free ports and a
// temporary data directory, waits until it is healthy and stops it when the
// test ends. The binary comes from $APIKIT_ETCD_BINARY when set; otherwise
// it is built from the module in tools/etcd, whose go.mod pins the etcd
// version, and cached under the user cache directory keyed by that version,
// so a fresh machine with Go and the module proxy needs nothing else. The
// build is guarded by a file lock: test packages that run in parallel build
// it once.
package etcdtest
