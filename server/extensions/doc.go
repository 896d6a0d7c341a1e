// Package extensions is the extensions server: apiextensions.k8s.io/v1
// CustomResourceDefinitions and the custom resources they define, served
// as kube-apiserver's apiextensions-apiserver serves them. It is the first
// server of a chain (New(completed, delegate, Config{}) like
// server/aggregator): the chain's filters run once, in the outermost
// server, and a request for a CRD group reaches this server's handler,
// which looks the CRD up in a serving state swapped whole on every change;
// no route is registered at run time.
//
// A custom resource is an Object (TypeMeta, ObjectMeta, the rest as JSON
// values) kept by a registry.Store like any built-in, so every registry
// semantic holds. A controller (informer.Informer over the CRDs) accepts
// names (NamesAccepted, Established), rebuilds the serving state, and runs
// the customresourcecleanup.apiextensions.k8s.io finalizer that deletes a
// CRD's objects before the CRD goes. See docs/crds.md.
package extensions
