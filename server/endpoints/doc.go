// Package endpoints holds the REST handlers of a resource (get, list, watch,
// create, update, patch, delete, deletecollection and the status
// subresource) and installs them as go-restful routes, one WebService per
// group-version, documented so that OpenAPI falls out of the route table.
//
// Handlers decode bodies (JSON or YAML, at most MaxRequestBodyBytes),
// negotiate the response form (JSON, YAML, server-side Table,
// PartialObjectMetadata) from the Accept header, call the registry, and
// answer every failure with a Kubernetes Status.
package endpoints
