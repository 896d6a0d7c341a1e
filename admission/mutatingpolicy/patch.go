package mutatingpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/cel-go/common/types/ref"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/policyset"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// mutate applies one mutation's result to a's object as matched in v and
// reports whether the object changed.
func (p *Plugin) mutate(a *admission.Attributes, v *policyset.Version, pt registration.PatchType, val ref.Val) (bool, error) {
	obj, err := p.versionedObject(a, v)
	if err != nil {
		return false, err
	}
	objJSON, err := json.Marshal(obj)
	if err != nil {
		return false, meta.NewInternalError(fmt.Errorf("encoding the object: %w", err))
	}
	var patched []byte
	switch pt {
	case registration.PatchTypeApplyConfiguration:
		ac, err := cel.ApplyConfiguration(val)
		if err != nil {
			return false, err
		}
		if patched, err = p.merge(a, v, obj, objJSON, ac); err != nil {
			return false, err
		}
	case registration.PatchTypeJSONPatch:
		ops, err := cel.JSONPatch(val)
		if err != nil {
			return false, err
		}
		if patched, err = applyJSONPatch(objJSON, ops, p.cfg.MaxObjectBytes); err != nil {
			return false, err
		}
	default:
		return false, fmt.Errorf("unsupported patchType %q", pt)
	}
	if len(patched) > p.cfg.MaxObjectBytes {
		return false, fmt.Errorf("the mutated object is larger than %d bytes", p.cfg.MaxObjectBytes)
	}
	return replace(a, v, obj, objJSON, patched)
}

// versionedObject is a's object in v's version, with apiVersion and kind.
func (p *Plugin) versionedObject(a *admission.Attributes, v *policyset.Version) (meta.Object, error) {
	obj := a.VersionedObject
	if !v.Own || obj == nil {
		obj = a.Object
		if v.ToVersion != nil {
			var err error
			if obj, err = v.ToVersion(a.Object); err != nil {
				return nil, meta.NewInternalError(fmt.Errorf("converting to %s: %w", v.Kind.GroupVersion(), err))
			}
		}
	}
	if tm := obj.GetTypeMeta(); tm.Kind == "" {
		tm.APIVersion, tm.Kind = v.Kind.GroupVersion().String(), v.Kind.Kind
	}
	return obj, nil
}

// applyJSONPatch applies ops to doc as kube-apiserver does: a failed test
// operation leaves the object as it was, any other failure is an error.
func applyJSONPatch(doc []byte, ops []*cel.JSONPatchOperation, maxBytes int) ([]byte, error) {
	if len(ops) == 0 {
		return doc, nil
	}
	raw := make([]map[string]any, 0, len(ops))
	for _, op := range ops {
		o := map[string]any{"op": op.Op, "path": op.Path}
		if op.From != "" {
			o["from"] = op.From
		}
		if op.Val != nil {
			v, err := cel.JSONValue(op.Val)
			if err != nil {
				return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
			}
			o["value"] = v
		}
		raw = append(raw, o)
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
	}
	patch, err := jsonpatch.DecodePatch(data)
	if err != nil {
		return nil, fmt.Errorf("JSONPath: %w", err)
	}
	opts := jsonpatch.NewApplyOptions()
	opts.AccumulatedCopySizeLimit = int64(maxBytes)
	out, err := patch.ApplyWithOptions(doc, opts)
	if errors.Is(err, jsonpatch.ErrTestFailed) {
		return doc, nil
	}
	if err != nil {
		return nil, fmt.Errorf("JSONPath: %w", err)
	}
	return out, nil
}

// merge merges an apply configuration into the object with
// structured-merge-diff, typed by the resource's schema, refusing one
// that sets atomic lists, maps or structs (they would be replaced whole).
func (p *Plugin) merge(a *admission.Attributes, v *policyset.Version, obj meta.Object, objJSON []byte, ac map[string]any) ([]byte, error) {
	tm := obj.GetTypeMeta()
	ac["apiVersion"], ac["kind"] = tm.APIVersion, tm.Kind
	pt := p.types.parseable(a, v, obj)
	acJSON, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: %w", err)
	}
	typedPatch, err := asTyped(pt, acJSON, false)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: failed to convert patch object to typed object: %w", err)
	}
	if atomics := findAtomics(nil, typedPatch.Schema(), typedPatch.TypeRef(), typedPatch.AsValue()); len(atomics) > 0 {
		return nil, fmt.Errorf("error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: %s", strings.Join(atomics, ", "))
	}
	live, err := asTyped(pt, objJSON, true)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: failed to convert original object to typed object: %w", err)
	}
	merged, err := live.Merge(typedPatch)
	if err != nil {
		return nil, fmt.Errorf("error applying patch: failed to merge patch: %w", err)
	}
	return value.ToJSON(merged.AsValue())
}

func asTyped(pt typed.ParseableType, data []byte, stored bool) (*typed.TypedValue, error) {
	v, err := value.FromJSON(data)
	if err != nil {
		return nil, err
	}
	if stored {
		// Stored objects may hold duplicate list keys, as server-side
		// apply allows them.
		return typed.AsTyped(v, pt.Schema, pt.TypeRef, typed.AllowDuplicates)
	}
	return typed.AsTyped(v, pt.Schema, pt.TypeRef)
}

// findAtomics returns the paths of the atomic lists, maps and structs v
// sets, as kube-apiserver's check of apply configurations.
func findAtomics(path []fieldpath.PathElement, s *smdschema.Schema, tr smdschema.TypeRef, v value.Value) []string {
	a, ok := s.Resolve(tr)
	if !ok {
		return nil
	}
	var out []string
	if v.IsMap() && a.Map != nil {
		if a.Map.ElementRelationship == smdschema.Atomic {
			out = append(out, pathString(path))
		}
		v.AsMap().Iterate(func(key string, val value.Value) bool {
			pe := fieldpath.PathElement{FieldName: &key}
			if sf, ok := a.Map.FindField(key); ok {
				out = append(out, findAtomics(append(path[:len(path):len(path)], pe), s, sf.Type, val)...)
			} else if a.Map.ElementType.NamedType != nil || a.Map.ElementType.Inlined != (smdschema.Atom{}) {
				out = append(out, findAtomics(append(path[:len(path):len(path)], pe), s, a.Map.ElementType, val)...)
			}
			return true
		})
	}
	if v.IsList() && a.List != nil {
		if a.List.ElementRelationship == smdschema.Atomic {
			out = append(out, pathString(path))
		}
		l := v.AsList()
		for i := 0; i < l.Length(); i++ {
			pe := fieldpath.PathElement{Index: &i}
			out = append(out, findAtomics(append(path[:len(path):len(path)], pe), s, a.List.ElementType, l.At(i))...)
		}
	}
	return out
}

func pathString(path []fieldpath.PathElement) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString(p.String())
	}
	return b.String()
}

// replace decodes the mutated JSON into a new object of obj's type and
// puts it, in the storage version, in place of a.Object, as a webhook's
// patch is; it reports whether the object changed.
func replace(a *admission.Attributes, v *policyset.Version, obj meta.Object, objJSON, patched []byte) (bool, error) {
	if bytes.Equal(objJSON, patched) {
		return false, nil
	}
	typ := reflect.TypeOf(obj)
	if typ.Kind() != reflect.Pointer {
		return false, meta.NewInternalError(fmt.Errorf("cannot mutate an object of type %v", typ))
	}
	decoded := reflect.New(typ.Elem()).Interface().(meta.Object)
	if err := json.Unmarshal(patched, decoded); err != nil {
		return false, meta.NewInternalError(fmt.Errorf("decoding the mutated object: %w", err))
	}
	if tm := decoded.GetTypeMeta(); tm.APIVersion != v.Kind.GroupVersion().String() || tm.Kind != v.Kind.Kind {
		return false, meta.NewInternalError(errors.New("a mutation changed the object's apiVersion or kind"))
	}
	again, err := json.Marshal(decoded)
	if err != nil {
		return false, meta.NewInternalError(err)
	}
	if bytes.Equal(again, objJSON) {
		return false, nil
	}
	stored := decoded
	if v.ToStorage != nil {
		if stored, err = v.ToStorage(decoded); err != nil {
			return false, meta.NewInternalError(fmt.Errorf("converting the mutated object: %w", err))
		}
	}
	dst, src := reflect.ValueOf(a.Object), reflect.ValueOf(stored)
	if dst.Type() != src.Type() {
		return false, meta.NewInternalError(fmt.Errorf("the mutated object is a %v, not a %v", src.Type(), dst.Type()))
	}
	dst.Elem().Set(src.Elem())
	if a.ToVersion == nil {
		a.VersionedObject = a.Object
	} else if a.VersionedObject, err = a.ToVersion(a.Object); err != nil {
		return false, meta.NewInternalError(err)
	}
	return true, nil
}

// typeCache holds the structured-merge-diff types of the resources'
// schemas, built once each (a Set's conversion walks all its schemas).
type typeCache struct {
	mu sync.Mutex
	m  map[typeKey]typed.ParseableType
}

type typeKey struct {
	set *schema.Set
	ref string
}

// maxCachedTypes bounds the cache: CRDs' schemas are replaced by new ones
// as they change.
const maxCachedTypes = 256

// parseable returns the type of obj as matched in v: the request's schema
// for its own version, the Go type's for another, and without either
// structured-merge-diff's deduced type (maps merged key by key, lists
// atomic).
func (c *typeCache) parseable(a *admission.Attributes, v *policyset.Version, obj meta.Object) typed.ParseableType {
	if a.Schemas == nil {
		return typed.DeducedParseableType
	}
	n := a.Schema
	if !v.Own || n == nil {
		var err error
		if n, err = a.Schemas.AddType(reflect.TypeOf(obj)); err != nil {
			return typed.DeducedParseableType
		}
	}
	if n == nil || n.Ref == "" {
		return typed.DeducedParseableType
	}
	key := typeKey{a.Schemas, n.Ref}
	c.mu.Lock()
	defer c.mu.Unlock()
	if pt, ok := c.m[key]; ok {
		return pt
	}
	s, err := a.Schemas.SMD()
	if err != nil {
		return typed.DeducedParseableType
	}
	ref := n.Ref
	pt := typed.ParseableType{Schema: s, TypeRef: smdschema.TypeRef{NamedType: &ref}}
	if !pt.IsValid() {
		return typed.DeducedParseableType
	}
	if c.m == nil || len(c.m) >= maxCachedTypes {
		c.m = map[typeKey]typed.ParseableType{}
	}
	c.m[key] = pt
	return pt
}
