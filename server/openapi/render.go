package openapi

import (
	"fmt"
	"reflect"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/go-openapi/spec"

	"github.com/apikit-dev/apikit/schema"
)

// Extension keys of the merge semantics, read by kubectl (client-side
// apply's strategic merge patches) and by server-side apply's clients.
const (
	extListType      = "x-kubernetes-list-type"
	extListMapKeys   = "x-kubernetes-list-map-keys"
	extMapType       = "x-kubernetes-map-type"
	extPatchStrategy = "x-kubernetes-patch-strategy"
	extPatchMergeKey = "x-kubernetes-patch-merge-key"
	extPreserve      = "x-kubernetes-preserve-unknown-fields"
)

// addRouteModels puts the Go types routes read and write into the schema
// set, so that every definition the paths refer to is rendered from it.
func addRouteModels(set *schema.Set, services []*restful.WebService) error {
	for _, ws := range services {
		for _, r := range ws.Routes() {
			samples := []any{r.ReadSample, r.WriteSample}
			for _, e := range r.ResponseErrors {
				samples = append(samples, e.Model)
			}
			for _, s := range samples {
				if s == nil {
					continue
				}
				if _, err := set.AddType(reflect.TypeOf(s)); err != nil {
					return fmt.Errorf("openapi: route %s %s: %w", r.Method, r.Path, err)
				}
			}
		}
	}
	return nil
}

// renderDefinitions renders every named schema of the set as a Swagger 2.0
// definition, under the name the namer gives its Go type.
func (b *builder) renderDefinitions(set *schema.Set) (spec.Definitions, error) {
	defs := spec.Definitions{}
	for _, key := range set.Keys() {
		n, _ := set.Named(key)
		name, err := b.definitionName(set, key)
		if err != nil {
			return nil, err
		}
		s, err := b.render(set, n)
		if err != nil {
			return nil, fmt.Errorf("openapi: definition %s: %w", name, err)
		}
		defs[name] = *s
	}
	return defs, nil
}

// definitionName is the published name of the schema under key: the
// namer's for a Go type, the key itself for a schema read from a document.
func (b *builder) definitionName(set *schema.Set, key string) (string, error) {
	t, ok := set.GoType(key)
	if !ok {
		return key, nil
	}
	name, ok := b.names.name(t)
	if !ok {
		return "", fmt.Errorf("openapi: %s has no definition name", t)
	}
	return name, nil
}

// render turns one schema node into a Swagger 2.0 schema.
func (b *builder) render(set *schema.Set, n *schema.Schema) (*spec.Schema, error) {
	out := &spec.Schema{}
	out.Description = n.Description
	if n.Ref != "" {
		name, err := b.definitionName(set, n.Ref)
		if err != nil {
			return nil, err
		}
		out.Ref = spec.MustCreateRef("#/definitions/" + name)
	}
	if n.Type != "" {
		out.Type = spec.StringOrArray{n.Type}
	}
	out.Format = n.Format
	out.Default = n.Default
	out.Enum = n.Enum
	out.Minimum, out.Maximum = n.Minimum, n.Maximum
	if n.Nullable {
		out.AddExtension("x-nullable", true)
	}
	if len(n.Properties) > 0 || n.Type == "object" && n.AdditionalProperties == nil && !n.Unknown {
		out.Properties = spec.SchemaProperties{}
		for _, p := range n.Properties {
			ps, err := b.render(set, p.Schema)
			if err != nil {
				return nil, err
			}
			out.Properties[p.Name] = *ps
		}
		out.Required = n.Required
	}
	if n.AdditionalProperties != nil {
		v, err := b.render(set, n.AdditionalProperties)
		if err != nil {
			return nil, err
		}
		out.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: v}
	}
	if n.Items != nil {
		v, err := b.render(set, n.Items)
		if err != nil {
			return nil, err
		}
		out.Items = &spec.SchemaOrArray{Schema: v}
	}
	if n.Unknown {
		out.AddExtension(extPreserve, true)
	}
	if n.ListType != "" {
		out.AddExtension(extListType, string(n.ListType))
	}
	if len(n.ListMapKeys) > 0 {
		out.AddExtension(extListMapKeys, n.ListMapKeys)
	}
	if n.MapType != "" {
		out.AddExtension(extMapType, string(n.MapType))
	}
	if n.PatchStrategy != "" {
		out.AddExtension(extPatchStrategy, n.PatchStrategy)
	}
	if n.PatchMergeKey != "" {
		out.AddExtension(extPatchMergeKey, n.PatchMergeKey)
	}
	return out, nil
}
