package storage

import "github.com/apikit-dev/apikit/meta"

// KeyRoot returns where a resource's objects live when nothing says
// otherwise: "/<group>/<resource>", "/<resource>" for the core group, as
// kube-apiserver lays out etcd (under the backend's own prefix, /registry
// by default). It is the one place that layout is written: the registry's
// stores and the watch caches both read it, so that a store and the cache
// in front of its storage always agree on which keys are the resource's.
func KeyRoot(resource meta.GroupResource) string {
	if resource.Group == "" {
		return "/" + resource.Resource
	}
	return "/" + resource.Group + "/" + resource.Resource
}

// Key returns the key of one object under root: root/namespace/name, or
// root/name for a cluster-scoped one (namespace "").
func Key(root, namespace, name string) string {
	return KeyPrefix(root, namespace) + name
}

// KeyPrefix returns the prefix of the keys of a namespace's objects under
// root (root/namespace/), or of all of them when namespace is "" (root/).
func KeyPrefix(root, namespace string) string {
	if namespace == "" {
		return root + "/"
	}
	return root + "/" + namespace + "/"
}

// Rooted is implemented by storage that serves only the keys under one
// root specially (a watch cache): a store given such storage keeps its
// objects under that root, and refuses another.
type Rooted interface {
	// KeyRoot returns the root, as KeyRoot makes it (no trailing "/").
	KeyRoot() string
}

// RootedFactory is a Factory that can also hand out a resource's storage
// for keys under a root of the caller's choosing (registry.Options.KeyRoot
// other than KeyRoot(resource)), a watch cache of that root included.
type RootedFactory interface {
	Factory
	ForRoot(resource meta.GroupResource, root string) (Interface, error)
}

// ForRoot returns f's storage for resource's keys under root: through
// f.ForRoot when f is a RootedFactory, else f.For, whose storage (a plain
// backend) serves any key alike.
func ForRoot(f Factory, resource meta.GroupResource, root string) (Interface, error) {
	if rf, ok := f.(RootedFactory); ok {
		return rf.ForRoot(resource, root)
	}
	return f.For(resource)
}
