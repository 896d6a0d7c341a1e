// Package server builds Kubernetes-style API servers: Config holds what a
// server is made of, Complete fills in what can be derived, and New builds a
// GenericServer that serves API groups (one go-restful WebService per
// group-version) behind the standard handler chain (chain.go), with
// discovery, OpenAPI, /version and health endpoints.
//
// Servers compose: New takes a DelegationTarget, and requests no route of a
// server claims fall through to its delegate, as kube-apiserver chains
// APIExtensions -> KubeAPIServer -> Aggregator. The outermost server runs the
// filters once and serves discovery, OpenAPI, health and hooks for the whole
// chain. An aggregator (server/aggregator) is such an outermost server; it
// lists remote groups in /apis through SetDiscoveryGroups and merges its
// backends' OpenAPI documents with OpenAPIDocuments'.
package server
