package cacher

import (
	"errors"
	"fmt"
	"sync"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// KeyRoot returns the prefix of a resource's keys when its registry store
// keeps the default layout, "/<group>/<resource>/" ("/<resource>/" for the
// core group): the keys a resource's cache holds.
func KeyRoot(resource meta.GroupResource) string {
	if resource.Group == "" {
		return "/" + resource.Resource + "/"
	}
	return "/" + resource.Group + "/" + resource.Resource + "/"
}

// Factory is a storage.Factory that puts a Cacher in front of the storage
// another Factory gives each resource, as a storage.WatchCacheConfig says
// (--watch-cache, --watch-cache-sizes): the cache of a resource is made on
// its first For, holds the keys under KeyRoot(resource), and lives until
// Close. A resource the configuration does not cache, or asked for without
// a resource name (a group's shared storage, whose keys the factory cannot
// know), gets the backend's storage as it is.
type Factory struct {
	backend storage.Factory
	config  storage.WatchCacheConfig
	opts    []Option

	mu     sync.Mutex
	caches map[meta.GroupResource]*Cacher
	closed bool
}

var _ storage.Factory = (*Factory)(nil)

// NewFactory returns a Factory of caches over backend; opts apply to every
// cache, before the size config gives the resource.
func NewFactory(backend storage.Factory, config storage.WatchCacheConfig, opts ...Option) *Factory {
	return &Factory{backend: backend, config: config, opts: opts, caches: map[meta.GroupResource]*Cacher{}}
}

// For implements storage.Factory.
func (f *Factory) For(resource meta.GroupResource) (storage.Interface, error) {
	size, cached := f.config.Size(resource)
	if !cached || resource.Resource == "" {
		return f.backend.For(resource)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("watch cache factory is closed")
	}
	if c := f.caches[resource]; c != nil {
		return c, nil
	}
	s, err := f.backend.For(resource)
	if err != nil {
		return nil, err
	}
	c := New(s, KeyRoot(resource), append(append([]Option(nil), f.opts...), WithCapacity(size))...)
	f.caches[resource] = c
	return c, nil
}

// Close closes every cache the factory made; it does not close the
// backend's storage. Later calls of For fail.
func (f *Factory) Close() error {
	f.mu.Lock()
	caches := f.caches
	f.caches, f.closed = map[meta.GroupResource]*Cacher{}, true
	f.mu.Unlock()
	var errs []error
	for r, c := range caches {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the watch cache of %s: %w", r, err))
		}
	}
	return errors.Join(errs...)
}
