// Package schema is apikit's one structural-schema model: the shape of
// every served resource, with the merge semantics of its lists and maps.
//
// It sits at the base of the house, beside meta and below registry and
// server/endpoints: a Go type becomes a schema by reflection (FromType reads
// the json, description, enum, format, default, minimum, maximum, optional
// and merge-strategy struct tags), and a CustomResourceDefinition's OpenAPI
// v3 schema becomes one with FromOpenAPIV3, filed with Set.Add. What reads
// shapes reads this model:
// server/openapi renders the OpenAPI v2 and v3 definitions from it, and
// server-side apply turns it into structured-merge-diff's typed values
// (Set.SMD).
//
// Merge semantics come from struct tags named after Kubernetes' markers:
//
//	Ports []Port `json:"ports" listType:"map" listMapKeys:"name,protocol"`
//	Tags  []string `json:"tags" listType:"set"`
//	Args  []string `json:"args" listType:"atomic"`
//	Sel   map[string]string `json:"sel" mapType:"atomic"`
//
// A list without listType but with Kubernetes' strategic-merge-patch tags
// (`patchStrategy:"merge" patchMergeKey:"name"`) is a map keyed by the
// merge key, or a set when it has no key, as Kubernetes' own schema
// conversion reads them; any other list is atomic, and maps and structs are
// granular. Lists and maps publish these as x-kubernetes-list-type,
// x-kubernetes-list-map-keys, x-kubernetes-map-type and
// x-kubernetes-patch-strategy/x-kubernetes-patch-merge-key. See
// docs/openapi.md and docs/apply.md.
package schema
