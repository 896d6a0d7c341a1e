// Package storage defines how apikit persists objects: as encoded bytes under
// string keys, each write stamped with a store-wide revision that clients see
// as the object's resourceVersion.
//
// Interface is the contract. Its backends are etcd3 (an etcd cluster through
// go.etcd.io/etcd/client/v3), embedded (an in-process single-node etcd, the
// default) and memory (the same semantics without persistence); cacher puts a
// watch cache in front of any of them. storagetest is the conformance suite
// every backend passes.
//
// The storage layer knows nothing of Go types: the registry above it encodes
// objects, sets metadata.resourceVersion from KeyValue.Revision on the way
// out, and expresses uid preconditions and filters as callbacks.
package storage
