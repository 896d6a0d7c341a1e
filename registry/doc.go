// Package registry is the generic REST store: Store[T] keeps objects of one
// Go type in a storage.Interface and gives them Kubernetes semantics (names
// and generateName, uid, creationTimestamp, resourceVersion preconditions,
// generation, finalizers and deletionTimestamp, dryRun, status subresource,
// label and field selectors, tables), while a Strategy supplies what is
// particular to the resource (defaults, validation, what a client may set).
//
// A Store works in one Go type, the storage version. Serve and ServeVersion
// expose it in one served API version each, converting with plain functions
// where the served type differs; the server installs the Resource values they
// return, one per group-version.
//
// Objects handed out by a Resource may be shared with a cache: treat them as
// read-only.
package registry
