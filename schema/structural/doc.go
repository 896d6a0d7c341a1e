// Package structural gives a structural schema (a schema.Schema read from a
// CustomResourceDefinition's openAPIV3Schema) its meaning on JSON values,
// as k8s.io/apiextensions-apiserver does for custom resources. DecodeJSON
// decodes a document into the value convention the package reads
// (map[string]any, []any, string, bool, nil, int64 for integers, float64
// for other numbers). It sits below server/extensions, which decodes custom
// resources with it.
package structural
