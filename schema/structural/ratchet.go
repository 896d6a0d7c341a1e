package structural

import (
	"strconv"
	"strings"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// ValidateValuesUpdate is ValidateValues for an update from old, with
// kube-apiserver's validation ratcheting (CRDValidationRatcheting, on by
// default since 1.30): an error at a value the update left unchanged is
// dropped, so an object stored under an older, looser schema can still be
// labelled or have other fields changed. Errors of a node are dropped when
// the node equals its correlated old value; values correlate as
// apiserver's CorrelatedObject correlates them: object properties and
// additionalProperties by name (not the root's apiVersion and kind), the
// items of x-kubernetes-list-type=map lists by their keys, the items of
// other lists not at all (such a list is unchanged only as a whole).
// kube-apiserver sends no warning for a dropped error, and neither does
// this.
//
// An update that passes costs one validation; only an invalid one is
// validated a second time, with the old value beside it.
func ValidateValuesUpdate(s *schema.Schema, value, old any, base *meta.Path) meta.FieldErrors {
	errs := ValidateValues(s, value, base)
	if len(errs) == 0 {
		return errs
	}
	v := &validator{ps: &pathStack{}, base: base}
	v.node(s, value, opath{ps: v.ps}, prior{value: old, ok: true})
	return v.errs
}

// prior is the old value correlated with a node on an update; ok is false
// where there is none (a create, a new field, an item of a list whose
// items do not correlate).
type prior struct {
	value any
	ok    bool
}

// field is the old value correlated with the property or additional
// property name of the object at path: the old object's value under the
// same name. At the root, apiVersion and kind are not correlated, as kube's
// ratcheting validator leaves them: old and new are converted to one
// version, so a change of them is not visible.
func (p prior) field(path opath, name string) prior {
	if !p.ok || (path.n == 0 && (name == "apiVersion" || name == "kind")) {
		return prior{}
	}
	m, ok := p.value.(map[string]any)
	if !ok {
		return prior{}
	}
	old, ok := m[name]
	return prior{value: old, ok: ok}
}

// drop removes the errors from index from on, and forgets their messages
// so that a later node may report the same message again, as kube-openapi
// merges a ratcheted node's result as warnings only.
func (v *validator) drop(from int) {
	for _, k := range v.keys[from:] {
		delete(v.seen, k)
	}
	v.errs, v.keys = v.errs[:from], v.keys[:from]
}

// MapListItems pairs the items of a list with the old list's, as
// kube-apiserver's MapList does for ratcheting and for CEL's oldSelf: an
// item of an x-kubernetes-list-type=map list with the first old item of
// the same keys; items of other lists with none.
type MapListItems struct {
	keys  []string
	byKey map[string]any
}

// NewMapListItems indexes old, the old value of a list of schema s.
func NewMapListItems(s *schema.Schema, old any) MapListItems {
	list, _ := old.([]any)
	if s == nil || s.ListType != schema.ListMap || len(s.ListMapKeys) == 0 || len(list) == 0 {
		return MapListItems{}
	}
	c := MapListItems{keys: s.ListMapKeys, byKey: make(map[string]any, len(list))}
	for _, item := range list {
		if k, ok := c.key(item); ok {
			// The first item with a key wins, as in kube's MapList.
			if _, dup := c.byKey[k]; !dup {
				c.byKey[k] = item
			}
		}
	}
	return c
}

// Old returns the old item with the keys of item.
func (c MapListItems) Old(item any) (any, bool) {
	if c.byKey == nil {
		return nil, false
	}
	k, ok := c.key(item)
	if !ok {
		return nil, false
	}
	old, ok := c.byKey[k]
	return old, ok
}

func correlateItems(s *schema.Schema, old prior) MapListItems {
	if !old.ok {
		return MapListItems{}
	}
	return NewMapListItems(s, old.value)
}

// of is the old item with the keys of item.
func (c MapListItems) of(item any) prior {
	old, ok := c.Old(item)
	return prior{value: old, ok: ok}
}

// key is an item's composite key: each key field must be present and a
// scalar; values of different types never match (1 is not 1.0), as in
// kube's MapList, which also compares a float64 key to six decimals when
// there are several keys.
func (c MapListItems) key(item any) (string, bool) {
	m, ok := item.(map[string]any)
	if !ok {
		return "", false
	}
	var b strings.Builder
	for _, name := range c.keys {
		switch t := m[name].(type) {
		case string:
			b.WriteByte('s')
			b.WriteString(strconv.Quote(t))
		case int64:
			b.WriteByte('i')
			b.WriteString(strconv.FormatInt(t, 10))
		case float64:
			b.WriteByte('f')
			if len(c.keys) == 1 {
				b.WriteString(strconv.FormatFloat(t, 'g', -1, 64))
			} else {
				b.WriteString(strconv.FormatFloat(t, 'f', 6, 64))
			}
		case bool:
			b.WriteByte('b')
			b.WriteString(strconv.FormatBool(t))
		default:
			return "", false
		}
		b.WriteByte(0)
	}
	return b.String(), true
}

// Unchanged is kube's CorrelatedObject.CachedDeepEqual: whether a value
// of schema s equals its correlated old value, comparing objects field by
// field through the schema (a field the schema does not declare makes an
// object changed) and map lists item by item through their keys (order
// aside); other lists and scalars compare as values (1 is not 1.0).
func Unchanged(s *schema.Schema, old, value any) bool {
	if old == nil || value == nil {
		return old == nil && value == nil
	}
	switch t := value.(type) {
	case map[string]any:
		o, ok := old.(map[string]any)
		if !ok || len(o) != len(t) {
			return false
		}
		for k, v := range t {
			ov, ok := o[k]
			if !ok || s == nil {
				return false
			}
			ps, ok := s.Property(k)
			if !ok {
				ps = s.AdditionalProperties
			}
			if ps == nil || !Unchanged(ps, ov, v) {
				return false
			}
		}
		return true
	case []any:
		o, ok := old.([]any)
		if !ok || len(o) != len(t) {
			return false
		}
		if s == nil || s.ListType != schema.ListMap {
			return deepEqual(old, value)
		}
		items := correlateItems(s, prior{value: old, ok: true})
		for _, item := range t {
			p := items.of(item)
			if !p.ok || s.Items == nil || !Unchanged(s.Items, p.value, item) {
				return false
			}
		}
		return true
	}
	if _, ok := old.(map[string]any); ok {
		return false
	}
	if _, ok := old.([]any); ok {
		return false
	}
	return deepEqual(old, value)
}
