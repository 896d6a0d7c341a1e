package structural

import (
	"encoding/json"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// ValidateListTypes checks that x-kubernetes-list-type set lists hold no
// value twice and map lists no key twice, as apiextensions-apiserver's
// listtype validation does: each repeated value is reported once, at its
// second occurrence. Maps' entries are reported under path[key]. Validate
// calls it; call it alone only for values that skip Validate.
func ValidateListTypes(s *schema.Schema, value any) meta.FieldErrors {
	w := &listTypeWalk{}
	w.walk(s, value)
	sortByField(w.errs)
	return w.errs
}

type listTypeWalk struct {
	lazyPath
	errs meta.FieldErrors
}

func (w *listTypeWalk) walk(s *schema.Schema, value any) {
	if s == nil || value == nil {
		return
	}
	switch t := value.(type) {
	case []any:
		switch s.ListType {
		case schema.ListSet:
			if dups := repeatedItems(t); len(dups) > 0 {
				p := w.path()
				for _, i := range dups {
					w.errs = append(w.errs, meta.Duplicate(p.Index(i), t[i]))
				}
			}
		case schema.ListMap:
			if len(t) > 1 || (len(t) == 1 && !isObjectOrNull(t[0])) {
				w.errs = append(w.errs, validateListMap(s, t, w.path())...)
			}
		}
		if s.Items != nil {
			for i, item := range t {
				w.push(step{kind: indexStep, index: i})
				w.walk(s.Items, item)
				w.pop()
			}
		}
	case map[string]any:
		for k, v := range t {
			if s.EmbeddedResource && isMetaField(k) {
				continue
			}
			if prop, ok := s.Property(k); ok {
				w.push(step{kind: childStep, name: k})
				w.walk(prop, v)
				w.pop()
			} else if s.AdditionalProperties != nil {
				w.push(step{kind: keyStep, name: k})
				w.walk(s.AdditionalProperties, v)
				w.pop()
			}
		}
	}
}

func isObjectOrNull(v any) bool {
	_, ok := v.(map[string]any)
	return ok || v == nil
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
