package endpoints

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Strategic merge patch, as k8s.io/apiserver applies it to Go types: a JSON
// merge patch whose lists merge instead of being replaced where the Go
// field says so (`patchStrategy:"merge" patchMergeKey:"name"`: elements
// with the same key merge, new ones are appended; a list of scalars takes
// the union), with the patch directives kubectl and client-go send:
//
//   - "$patch": "replace" in an object replaces it with the rest of the
//     patch object, "delete" removes it (in a merged list: the element of
//     that key), "merge" is the default;
//   - "$deleteFromPrimitiveList/<field>": values to remove from a merged
//     list of scalars;
//   - "$retainKeys": the keys an object keeps (others are cleared);
//   - "$setElementOrder/<field>": accepted; the merged list keeps the
//     current order and appends new elements, as the patch's own order.
//
// Fields the type does not know are merged as JSON merge patch merges them;
// the decode that follows reports them under fieldValidation.

// patchDirective is the "$patch" key.
const patchDirective = "$patch"

// strategicMergePatch applies patch (a JSON object) to original (the
// object's JSON) for Go type t.
func strategicMergePatch(original, patch []byte, t reflect.Type) ([]byte, error) {
	// Numbers stay json.Number: an int64 beyond 2^53 must not pass
	// through a float64.
	var orig, p map[string]any
	if err := decodeNumbers(original, &orig); err != nil {
		return nil, fmt.Errorf("the object: %w", err)
	}
	if err := decodeNumbers(patch, &p); err != nil || p == nil {
		return nil, errBadStrategicPatch("the patch must be a JSON object")
	}
	merged, err := mergeObject(orig, p, t)
	if err != nil {
		return nil, err
	}
	if merged == nil {
		return nil, errBadStrategicPatch(`"$patch": "delete" cannot delete the whole object`)
	}
	return json.Marshal(merged)
}

func decodeNumbers(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// errBadStrategicPatch is a patch that cannot apply, said to the client.
type errBadStrategicPatch string

func (e errBadStrategicPatch) Error() string { return string(e) }

// mergeObject merges patch into orig (either may be nil) for type t (nil:
// untyped). A nil result means the object is deleted.
func mergeObject(orig, patch map[string]any, t reflect.Type) (map[string]any, error) {
	switch d := patch[patchDirective]; d {
	case nil, "merge":
	case "replace":
		out := make(map[string]any, len(patch))
		for k, v := range patch {
			if k != patchDirective && !strings.HasPrefix(k, "$") {
				out[k] = v
			}
		}
		return out, nil
	case "delete":
		return nil, nil
	default:
		return nil, errBadStrategicPatch(fmt.Sprintf("unknown patch type %v in %q", d, patchDirective))
	}
	out := make(map[string]any, len(orig)+len(patch))
	for k, v := range orig {
		out[k] = v
	}
	for k, v := range patch {
		switch {
		case k == patchDirective, k == "$retainKeys", strings.HasPrefix(k, "$setElementOrder/"):
			continue
		case strings.HasPrefix(k, "$deleteFromPrimitiveList/"):
			field := strings.TrimPrefix(k, "$deleteFromPrimitiveList/")
			drop, ok := v.([]any)
			if !ok {
				return nil, errBadStrategicPatch(fmt.Sprintf("%s must be a list", k))
			}
			if cur, ok := out[field].([]any); ok {
				out[field] = slices.DeleteFunc(slices.Clone(cur), func(x any) bool {
					return slices.ContainsFunc(drop, func(d any) bool { return reflect.DeepEqual(x, d) })
				})
			}
			continue
		case strings.HasPrefix(k, "$"):
			return nil, errBadStrategicPatch(fmt.Sprintf("unknown patch directive %q", k))
		}
		f := fieldOf(t, k)
		if v == nil {
			delete(out, k)
			continue
		}
		switch pv := v.(type) {
		case map[string]any:
			ov, _ := out[k].(map[string]any)
			m, err := mergeObject(ov, pv, f.objectType())
			if err != nil {
				return nil, err
			}
			if m == nil {
				delete(out, k)
			} else {
				out[k] = m
			}
		case []any:
			if !f.merge {
				out[k] = pv
				continue
			}
			ol, _ := out[k].([]any)
			l, err := mergeList(ol, pv, f)
			if err != nil {
				return nil, err
			}
			out[k] = l
		default:
			out[k] = v
		}
	}
	if rk, ok := patch["$retainKeys"]; ok {
		keep, ok := rk.([]any)
		if !ok {
			return nil, errBadStrategicPatch(`"$retainKeys" must be a list`)
		}
		for k := range out {
			if !slices.Contains(keep, any(k)) {
				delete(out, k)
			}
		}
	}
	return out, nil
}

// mergeList merges a patch list into a list whose field merges.
func mergeList(orig, patch []any, f patchField) ([]any, error) {
	out := slices.Clone(orig)
	if f.mergeKey == "" {
		// Scalars: the union, in order.
		for _, v := range patch {
			if !slices.ContainsFunc(out, func(x any) bool { return reflect.DeepEqual(x, v) }) {
				out = append(out, v)
			}
		}
		return out, nil
	}
	for _, v := range patch {
		pv, ok := v.(map[string]any)
		if !ok {
			return nil, errBadStrategicPatch(fmt.Sprintf("elements of a list merged by %q must be objects", f.mergeKey))
		}
		key, ok := pv[f.mergeKey]
		if !ok {
			return nil, errBadStrategicPatch(fmt.Sprintf("an element of a list merged by %q has no %q", f.mergeKey, f.mergeKey))
		}
		i := slices.IndexFunc(out, func(x any) bool {
			m, ok := x.(map[string]any)
			return ok && reflect.DeepEqual(m[f.mergeKey], key)
		})
		if i < 0 {
			if pv[patchDirective] == "delete" {
				continue
			}
			m, err := mergeObject(nil, pv, f.elem)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		cur, _ := out[i].(map[string]any)
		m, err := mergeObject(cur, pv, f.elem)
		if err != nil {
			return nil, err
		}
		if m == nil {
			out = slices.Delete(out, i, i+1)
		} else {
			out[i] = m
		}
	}
	return out, nil
}

// patchField is what a struct field's type and tags say about merging.
type patchField struct {
	typ      reflect.Type // the field's type, pointers removed
	elem     reflect.Type // for slices and maps, the element type
	merge    bool         // patchStrategy includes "merge" (lists)
	mergeKey string       // patchMergeKey
}

// objectType is the type an object value of the field merges as: a
// struct or a map; nil (untyped) for anything else.
func (f patchField) objectType() reflect.Type {
	if f.typ != nil && (f.typ.Kind() == reflect.Struct || f.typ.Kind() == reflect.Map) {
		return f.typ
	}
	return nil
}

// fieldOf is the field key of an object of type t: a struct's field, or
// any key of a map (its element type).
func fieldOf(t reflect.Type, key string) patchField {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return patchField{}
	}
	if t.Kind() == reflect.Map {
		return newPatchField(t.Elem(), "", "")
	}
	return patchFields(t)[key]
}

func newPatchField(ft reflect.Type, strategy, mergeKey string) patchField {
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	pf := patchField{typ: ft, mergeKey: mergeKey}
	pf.merge = slices.Contains(strings.Split(strategy, ","), "merge") && ft.Kind() == reflect.Slice
	if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
		pf.elem = ft.Elem()
		for pf.elem.Kind() == reflect.Pointer {
			pf.elem = pf.elem.Elem()
		}
	}
	return pf
}

// patchFields returns the JSON fields of struct type t with their merge
// strategies; nil for other types. A list field merges only with
// patchStrategy "merge"; without a patchMergeKey its elements are scalars
// and merge as a set.
func patchFields(t reflect.Type) map[string]patchField {
	if t.Kind() != reflect.Struct {
		return nil
	}
	if m, ok := patchFieldCache.Load(t); ok {
		return m.(map[string]patchField)
	}
	m := map[string]patchField{}
	for name, sf := range jsonFields(t) {
		m[name] = newPatchField(sf.Type, sf.Tag.Get("patchStrategy"), sf.Tag.Get("patchMergeKey"))
	}
	patchFieldCache.Store(t, m)
	return m
}

var patchFieldCache sync.Map // reflect.Type -> map[string]patchField
