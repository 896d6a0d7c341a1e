package cacher

import (
	"errors"
	"fmt"
	"sync"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// Factory is a storage.Factory that puts a Cacher in front of the storage
// another Factory gives each resource, as a storage.WatchCacheConfig says
// (--watch-cache, --watch-cache-sizes): the cache of a resource is made on
// its first For, holds the keys under storage.KeyRoot(resource) (or the
// root ForRoot names), and lives until Close. A resource the configuration does not cache, or asked for without
// a resource name (a group's shared storage, whose keys the factory cannot
// know), gets the backend's storage as it is.
type Factory struct {
	backend storage.Factory
	config  storage.WatchCacheConfig
	opts    []Option

	mu sync.Mutex
	// caches holds one cache per key root: a resource asked for under two
	// roots has two caches, as its objects live in two places.
	caches map[string]*Cacher
	closed bool
}

var _ storage.RootedFactory = (*Factory)(nil)

// NewFactory returns a Factory of caches over backend; opts apply to every
// cache, before the size config gives the resource.
func NewFactory(backend storage.Factory, config storage.WatchCacheConfig, opts ...Option) *Factory {
	return &Factory{backend: backend, config: config, opts: opts, caches: map[string]*Cacher{}}
}

// For implements storage.Factory: the resource's storage for the keys
// under storage.KeyRoot(resource).
func (f *Factory) For(resource meta.GroupResource) (storage.Interface, error) {
	return f.ForRoot(resource, storage.KeyRoot(resource))
}

// ForRoot implements storage.RootedFactory: the resource's storage for the
// keys under root, cached as the configuration says for the resource.
func (f *Factory) ForRoot(resource meta.GroupResource, root string) (storage.Interface, error) {
	size, cached := f.config.Size(resource)
	if !cached || resource.Resource == "" {
		return f.backend.For(resource)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("watch cache factory is closed")
	}
	if c := f.caches[root]; c != nil {
		return c, nil
	}
	s, err := f.backend.For(resource)
	if err != nil {
		return nil, err
	}
	c := New(s, root, append(append([]Option(nil), f.opts...), WithCapacity(size), forResource(resource))...)
	f.caches[root] = c
	return c, nil
}

// Close closes every cache the factory made; it does not close the
// backend's storage. Later calls of For fail.
func (f *Factory) Close() error {
	f.mu.Lock()
	caches := f.caches
	f.caches, f.closed = map[string]*Cacher{}, true
	f.mu.Unlock()
	var errs []error
	for root, c := range caches {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the watch cache of %s: %w", root, err))
		}
	}
	return errors.Join(errs...)
}
