package structural

import (
	"encoding/json"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// validateListTypes checks that x-kubernetes-list-type set lists hold no
// value twice and map lists no key twice, as apiextensions-apiserver's
// listtype validation does: each repeated value is reported once, at its
// second occurrence. Maps' entries are reported under path[key].
func validateListTypes(s *schema.Schema, value any, p *meta.Path) meta.FieldErrors {
	if s == nil || value == nil {
		return nil
	}
	var errs meta.FieldErrors
	switch t := value.(type) {
	case []any:
		switch s.ListType {
		case schema.ListSet:
			for _, i := range repeatedItems(t) {
				errs = append(errs, meta.Duplicate(p.Index(i), t[i]))
			}
		case schema.ListMap:
			errs = append(errs, validateListMap(s, t, p)...)
		}
		if s.Items != nil {
			for i, item := range t {
				errs = append(errs, validateListTypes(s.Items, item, p.Index(i))...)
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(t) {
			if s.EmbeddedResource && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			if prop, ok := s.Property(k); ok {
				errs = append(errs, validateListTypes(prop, t[k], p.Child(k))...)
			} else if s.AdditionalProperties != nil {
				errs = append(errs, validateListTypes(s.AdditionalProperties, t[k], p.Key(k))...)
			}
		}
	}
	return errs
}

// repeatedItems returns the index of the second occurrence of each value
// that occurs more than once; objects and lists compare by their JSON.
func repeatedItems(list []any) []int {
	if len(list) <= 1 {
		return nil
	}
	seen := make(map[any]int, len(list))
	var out []int
	for i, x := range list {
		var key any = x
		switch x.(type) {
		case map[string]any, []any:
			b, err := json.Marshal(x)
			if err != nil {
				continue
			}
			key = struct{ compound string }{string(b)}
		}
		seen[key]++
		if seen[key] == 2 {
			out = append(out, i)
		}
	}
	return out
}

// validateListMap checks a map list: every item an object (or null), and
// no two items with the same key values. An item without a key counts as
// one more with no value for it (kube-apiserver does not apply defaults
// here: they were applied before), and a duplicate is reported with the
// key values it has.
func validateListMap(s *schema.Schema, list []any, p *meta.Path) meta.FieldErrors {
	for i, x := range list {
		if _, ok := x.(map[string]any); x != nil && !ok {
			return meta.FieldErrors{meta.Invalid(p.Index(i), x, "must be an object for an array of list-type map")}
		}
	}
	if len(list) <= 1 {
		return nil
	}
	keys := make([]any, len(list))
	for i, x := range list {
		item, _ := x.(map[string]any)
		key := map[string]any{}
		for _, k := range s.ListMapKeys {
			if v, ok := item[k]; ok {
				key[k] = v
			}
		}
		keys[i] = key
	}
	var errs meta.FieldErrors
	for _, i := range repeatedItems(keys) {
		errs = append(errs, meta.Duplicate(p.Index(i), keys[i]))
	}
	return errs
}
