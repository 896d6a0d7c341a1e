package storagetest

import (
	"context"
	"sync/atomic"

	"github.com/apikit-dev/apikit/storage"
)

// CountingReads wraps a store and counts the reads of single objects that
// reach it: gets, and updates, which read the object before they write it
// (etcd3 without a cached object). Tests use it to show that a component
// learns what is stored from lists rather than a read per object.
type CountingReads struct {
	storage.Interface
	reads atomic.Int64
}

// Reads returns how many single-object reads reached the store.
func (c *CountingReads) Reads() int64 { return c.reads.Load() }

// Reset sets the count back to zero.
func (c *CountingReads) Reset() { c.reads.Store(0) }

// Get implements storage.Interface.
func (c *CountingReads) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	c.reads.Add(1)
	return c.Interface.Get(ctx, key, opts)
}

// GuaranteedUpdate implements storage.Interface.
func (c *CountingReads) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.KeyValue, error) {
	c.reads.Add(1)
	return c.Interface.GuaranteedUpdate(ctx, key, opts, tryUpdate)
}
