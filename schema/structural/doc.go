// Package structural gives a structural schema (a schema.Schema read from a
// CustomResourceDefinition's openAPIV3Schema) its meaning on JSON values,
// as k8s.io/apiextensions-apiserver does for custom resources:
//
//   - DecodeJSON decodes a document into the value convention the other
//     functions read (map[string]any, []any, string, bool, nil, int64 for
//     integers, float64 for other numbers);
//   - Validate checks a value against the OpenAPI v3 value validations,
//     formats, embedded resources and list types, with kube-apiserver's
//     messages and paths;
//   - Default fills the defaults of missing fields;
//   - Prune drops the fields the schema does not know and returns their
//     paths;
//   - CheckStructural checks, at CRD creation, that a raw openAPIV3Schema
//     is structural and its defaults valid, with apiextensions-apiserver's
//     messages;
//   - ValidateEmbeddedResource checks apiVersion, kind and metadata of an
//     x-kubernetes-embedded-resource object.
//
// It sits below the extensions server (server/extensions), for which a
// custom resource is decoded with DecodeJSON, then pruned, defaulted and
// validated on every write, and pruned and defaulted on every read from
// storage, in that order, as kube-apiserver does; CEL rules
// (x-kubernetes-validations) are package cel's. e2e/structuraldiff holds
// all of it to kube-apiserver's own code, message for message. See
// docs/crds.md, section "Schemas".
package structural
