package storage

import "github.com/apikit-dev/apikit/meta"

// Factory hands out the storage of each resource: a backend, possibly with a
// key prefix and a watch cache in front. The options package builds one from
// flags; a Store gets its storage.Interface from it.
type Factory interface {
	For(resource meta.GroupResource) (Interface, error)
}

// FactoryFunc adapts a function to Factory.
type FactoryFunc func(resource meta.GroupResource) (Interface, error)

// For calls f.
func (f FactoryFunc) For(resource meta.GroupResource) (Interface, error) { return f(resource) }

// Shared is a Factory that gives every resource the same backend; resources
// keep apart by their key prefixes.
func Shared(s Interface) Factory {
	return FactoryFunc(func(meta.GroupResource) (Interface, error) { return s, nil })
}
