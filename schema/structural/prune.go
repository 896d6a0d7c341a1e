package structural

import (
	"sort"
	"strconv"

	"github.com/apikit-dev/apikit/schema"
)

// Prune drops from value, in place, the fields s does not declare, and
// returns their paths sorted ("spec.foo", "spec.items[0].bar"), which
// kube-apiserver reports as `unknown field "spec.foo"` warnings or, under
// fieldValidation=Strict, errors. Fields under
// x-kubernetes-preserve-unknown-fields are kept (the properties the schema
// does declare there are still pruned within); an embedded resource keeps
// apiVersion and kind when they are strings and metadata when it is an
// object. With root set, value is a whole custom resource and is treated
// as an embedded resource itself.
//
// Then, as apiextensions-apiserver does after pruning, Prune drops the null
// values of fields that are not nullable and have no default (those with
// a default are left for Default to fill); these are not reported.
func Prune(s *schema.Schema, value any, root bool) []string {
	pruned := pruneFields(s, value, root)
	pruneNulls(value, rootSchema(s, root))
	return pruned
}

// rootSchema is s as Prune sees it: a whole resource's schema is an
// embedded resource.
func rootSchema(s *schema.Schema, root bool) *schema.Schema {
	if !root {
		return s
	}
	if s == nil {
		s = &schema.Schema{}
	}
	if !s.EmbeddedResource {
		c := *s
		c.EmbeddedResource = true
		s = &c
	}
	return s
}

// pruneFields is Prune without dropping nulls, as kube-apiserver's own
// pruning is (a CRD's defaults are held to it).
func pruneFields(s *schema.Schema, value any, root bool) []string {
	if root {
		if s == nil {
			s = &schema.Schema{}
		}
		if !s.EmbeddedResource {
			c := *s
			c.EmbeddedResource = true
			s = &c
		}
	}
	p := pruner{}
	if root {
		p.root = s
	}
	p.prune(value, s, nil)
	sort.Strings(p.pruned)
	return p.pruned
}

type pruner struct {
	pruned []string
	// root is the schema of the resource itself, whose metadata the
	// registry decodes; nil when Prune was not given a whole resource.
	root *schema.Schema
}

// objectMetaFields are the fields of ObjectMeta: what an embedded
// resource's metadata keeps, as kube-apiserver's metadata coercion keeps
// it.
var objectMetaFields = map[string]bool{
	"name": true, "generateName": true, "namespace": true, "selfLink": true, "uid": true,
	"resourceVersion": true, "generation": true, "creationTimestamp": true, "deletionTimestamp": true,
	"deletionGracePeriodSeconds": true, "labels": true, "annotations": true, "ownerReferences": true,
	"finalizers": true, "managedFields": true,
}

// keepMeta reports whether k is one of the meta fields an embedded
// resource keeps; an embedded resource's metadata loses its unknown fields
// on the way, as kube-apiserver's metadata coercion drops them.
func (p *pruner) keepMeta(s *schema.Schema, k string, v any, path []pathElem) bool {
	if !s.EmbeddedResource || !isMetaField(k) {
		return false
	}
	if md, ok := v.(map[string]any); ok && k == "metadata" && s != p.root {
		key := k
		at := append(path, pathElem{key: &key})
		for mk := range md {
			if !objectMetaFields[mk] {
				p.pruned = append(p.pruned, renderPath(at, mk))
				delete(md, mk)
			}
		}
	}
	return true
}

// pathElem is one step of the path being pruned: a key, or an index when
// key is nil.
type pathElem struct {
	key   *string
	index int
}

func renderPath(path []pathElem, key string) string {
	var b []byte
	for _, e := range path {
		if e.key == nil {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(e.index), 10)
			b = append(b, ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, *e.key...)
	}
	if len(b) > 0 {
		b = append(b, '.')
	}
	return string(append(b, key...))
}

// isMetaField reports whether k is one of the fields every Kubernetes
// object has at its top: an embedded resource keeps them, whatever their
// values, for the metadata checks to judge.
func isMetaField(k string) bool { return k == "apiVersion" || k == "kind" || k == "metadata" }

func (p *pruner) prune(x any, s *schema.Schema, path []pathElem) {
	if s != nil && s.Unknown {
		p.skip(x, s, path)
		return
	}
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			if s != nil && p.keepMeta(s, k, v, path) {
				continue
			}
			var sub *schema.Schema
			known := false
			if s != nil {
				if prop, ok := s.Property(k); ok {
					sub, known = prop, true
				} else if hasAdditionalProperties(s) {
					sub, known = s.AdditionalProperties, true
				}
			}
			if !known {
				// A top-level apiVersion, kind or metadata the schema
				// does not keep goes silently, as in kube-apiserver.
				if !isMetaField(k) || len(path) > 0 {
					p.pruned = append(p.pruned, renderPath(path, k))
				}
				delete(t, k)
				continue
			}
			key := k
			p.prune(v, sub, append(path, pathElem{key: &key}))
		}
	case []any:
		var items *schema.Schema
		if s != nil {
			items = s.Items
		}
		for i, v := range t {
			p.prune(v, items, append(path, pathElem{index: i}))
		}
	}
}

// skip walks a node that preserves unknown fields: what it declares is
// pruned as usual, the rest is kept.
func (p *pruner) skip(x any, s *schema.Schema, path []pathElem) {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			if p.keepMeta(s, k, v, path) {
				continue
			}
			key := k
			if prop, ok := s.Property(k); ok {
				p.prune(v, prop, append(path, pathElem{key: &key}))
			} else if hasAdditionalProperties(s) {
				p.prune(v, s.AdditionalProperties, append(path, pathElem{key: &key}))
			}
		}
	case []any:
		if s.Items == nil {
			return
		}
		for i, v := range t {
			p.skip(v, s.Items, append(path, pathElem{index: i}))
		}
	}
}

// hasAdditionalProperties reports whether a schema has additionalProperties,
// as a schema or as a boolean: either way kube keeps the map's keys (a
// boolean's values are pruned as unknown).
func hasAdditionalProperties(s *schema.Schema) bool {
	return s.AdditionalProperties != nil || s.AdditionalPropertiesAllowed != nil
}

// pruneNulls drops null values whose schema is neither nullable nor
// defaulted.
func pruneNulls(x any, s *schema.Schema) {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			var sub *schema.Schema
			if s != nil {
				if prop, ok := s.Property(k); ok {
					sub = prop
				} else {
					sub = s.AdditionalProperties
				}
			}
			if v == nil && sub != nil && !sub.Nullable && sub.Default == nil {
				delete(t, k)
				continue
			}
			pruneNulls(v, sub)
		}
	case []any:
		var items *schema.Schema
		if s != nil {
			items = s.Items
		}
		for _, v := range t {
			pruneNulls(v, items)
		}
	}
}
