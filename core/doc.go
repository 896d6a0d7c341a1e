// Package core serves Kubernetes' core group on the legacy path /api/v1
// (namespaces, configmaps, secrets, serviceaccounts with their token
// subresource, events) and the groups beside it that ordinary controllers
// need (events.k8s.io/v1 over the same events, coordination.k8s.io/v1
// leases), as installable API groups: New builds the stores on a server's
// storage, Install serves them on a server of a chain. Each resource is a
// package of its own under core/ (types, strategy, validation with
// kube-apiserver's messages); this package only assembles them.
package core
