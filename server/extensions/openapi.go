package extensions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/go-openapi/spec"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/server/openapi"
)

// definitionName is the OpenAPI definition name of a custom resource's
// kind, as kube-apiserver names it (com.example.v1.Widget).
func definitionName(gv meta.GroupVersion, kind string) string {
	parts := strings.Split(gv.Group, ".")
	slices.Reverse(parts)
	return strings.Join(parts, ".") + "." + gv.Version + "." + kind
}

// definition is a custom resource's OpenAPI definition: its version's
// schema with apiVersion, kind and metadata, and the group-version-kind
// extension kubectl looks up (explain, field validation).
func definition(raw json.RawMessage, gvk meta.GroupVersionKind) (spec.Schema, error) {
	var def spec.Schema
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &def); err != nil {
			return def, fmt.Errorf("reading the schema of %s: %w", gvk, err)
		}
	} else {
		def.Type = spec.StringOrArray{"object"}
		def.AddExtension("x-kubernetes-preserve-unknown-fields", true)
	}
	if def.Properties == nil {
		def.Properties = spec.SchemaProperties{}
	}
	def.Properties["apiVersion"] = *spec.StringProperty().WithDescription("APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources")
	def.Properties["kind"] = *spec.StringProperty().WithDescription("Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
	def.Properties["metadata"] = *spec.RefSchema("#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").WithDescription("Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
	def.AddExtension("x-kubernetes-group-version-kind", []map[string]string{{"group": gvk.Group, "kind": gvk.Kind, "version": gvk.Version}})
	return def, nil
}

// openAPI builds the documents of the served custom resources: one Build
// per group-version (its OpenAPI 3.0 document holds every CRD of it), for
// the outermost server to merge into the chain's.
func (st *state) openAPI(title, version string) []openapi.Remote {
	var out []openapi.Remote
	for _, g := range st.groups {
		for _, v := range g.Versions {
			gv := meta.GroupVersion{Group: g.Name, Version: v.Version}
			cfg := openapi.Config{Title: title, Version: version, Schemas: schema.NewSet(), Definitions: spec.Definitions{}}
			for _, sc := range st.byName {
				sv := sc.versions[v.Version]
				if sv == nil || sc.crd.Spec.Group != g.Name {
					continue
				}
				cfg.WebServices = append(cfg.WebServices, sv.ws)
				cfg.Resources = append(cfg.Resources, sv.resource)
				cfg.Definitions[definitionName(gv, sv.resource.Info().Kind)] = sv.definition
			}
			if len(cfg.WebServices) == 0 {
				continue
			}
			slices.SortFunc(cfg.WebServices, func(a, b *restful.WebService) int { return strings.Compare(a.Routes()[0].Path, b.Routes()[0].Path) })
			docs, err := openapi.Build(cfg)
			if err != nil {
				continue
			}
			r := openapi.Remote{Name: gv.String(), V2: docs.V2JSON(), V2Prefixes: []string{"/apis/" + gv.String()}, V3: map[string][]byte{}}
			for _, p := range docs.V3Paths() {
				if doc, _, ok := docs.V3JSON(p); ok {
					r.V3[p] = doc
				}
			}
			out = append(out, r)
		}
	}
	return out
}
