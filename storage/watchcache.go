package storage

import "github.com/apikit-dev/apikit/meta"

// WatchCacheConfig says which resources get a watch cache in front of
// their storage and how large, as kube-apiserver's --watch-cache and
// --watch-cache-sizes do. The options package fills it from flags; the
// layer that wraps storage in a cache reads it.
type WatchCacheConfig struct {
	// Enabled turns watch caches on.
	Enabled bool
	// DefaultSize is the capacity of a resource's cache when Sizes does not
	// name the resource; 0 leaves the choice to the cache (kube-apiserver's
	// caches size themselves).
	DefaultSize int
	// Sizes overrides DefaultSize per resource; a size of 0 turns the
	// resource's cache off.
	Sizes map[meta.GroupResource]int
}

// Size returns the capacity of resource's cache and whether it has one.
func (c WatchCacheConfig) Size(resource meta.GroupResource) (size int, cached bool) {
	if !c.Enabled {
		return 0, false
	}
	if s, ok := c.Sizes[resource]; ok {
		return s, s > 0
	}
	return c.DefaultSize, true
}
