// Package gc is a garbage collector for the resources of one server, as
// kube-controller-manager's garbage collector does it for a cluster: it
// deletes the dependents of deleted owners (objects whose ownerReferences
// name only owners that are gone: a Background delete, or a dangling
// reference), orphans the dependents of an owner deleted with the orphan
// finalizer (removes their references to it, then the finalizer), and
// deletes the dependents of an owner deleted in the foreground before
// removing its foregroundDeletion finalizer. The registry's delete adds
// those finalizers when server.Config.GarbageCollection is set.
//
// A Collector watches the metadata of every resource it is given with one
// informer each, starting and stopping informers as resources come and go
// (Config.Discover; Install follows its server's chain through
// server.GenericServer.WatchAPIGroups); its state is what the informers
// hold, so a restart rebuilds it from a fresh list. Owners are confirmed by a live read
// before a dependent is deleted: an informer that lags never makes a new
// owner look gone.
package gc
