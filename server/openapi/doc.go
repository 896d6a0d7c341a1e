// Package openapi builds and serves the OpenAPI documents of an apikit
// server: Swagger 2.0 at /openapi/v2 and, at /openapi/v3, an index and one
// OpenAPI 3.0 document per group-version, shaped as kube-apiserver's so that
// kubectl explain, kubectl's field validation and client-go read them
// unchanged.
//
// Paths come from the routes of server/endpoints (go-restful-openapi);
// definitions are rendered from package schema, the one model of the Go
// types the routes name (descriptions from `description` struct tags, merge
// semantics as x-kubernetes-list-type and friends); Build names them as Kubernetes does, adds the group-version-kind and
// action extensions, the List types (which have no Go type) and the meta
// types' documentation, then converts the result to OpenAPI 3.0. The server
// builds the documents once, when it is prepared to run, and serves them
// from memory with ETags, gzip and, for hash-addressed v3 documents,
// immutable caching. See docs/openapi.md.
package openapi
