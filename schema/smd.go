package schema

import (
	"fmt"

	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Names of the typedefs every converted schema carries for values of any
// shape, as Kubernetes' schema conversion names them: an untyped value whose
// maps merge key by key (deduced), and one that is replaced whole (atomic).
const (
	untypedDeduced = "__untyped_deduced_"
	untypedAtomic  = "__untyped_atomic_"
)

// SMD converts the named schemas of the Set to structured-merge-diff's
// schema, one typedef per key, for server-side apply's typed values. List
// and map semantics become SMD's element relationships: an atomic list or
// map is atomic, a set is an associative list without keys, a map list an
// associative list with keys, and maps and structs are separable unless
// atomic. The conversion is kept until a schema is added to the Set, and
// shared by every caller: it must not be modified.
func (s *Set) SMD() (*smd.Schema, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.smdMu.Lock()
	defer s.smdMu.Unlock()
	if s.smd != nil && s.smdGen == s.gen {
		return s.smd, nil
	}
	out := &smd.Schema{}
	for key, n := range s.named {
		atom, err := s.atom(n, key)
		if err != nil {
			return nil, err
		}
		out.Types = append(out.Types, smd.TypeDef{Name: key, Atom: atom})
	}
	deduced, atomic := untypedDeduced, untypedAtomic
	out.Types = append(out.Types,
		smd.TypeDef{Name: untypedAtomic, Atom: smd.Atom{
			Scalar: ptr(smd.Untyped),
			List:   &smd.List{ElementType: smd.TypeRef{NamedType: &atomic}, ElementRelationship: smd.Atomic},
			Map:    &smd.Map{ElementType: smd.TypeRef{NamedType: &atomic}, ElementRelationship: smd.Atomic},
		}},
		smd.TypeDef{Name: untypedDeduced, Atom: smd.Atom{
			Scalar: ptr(smd.Untyped),
			List:   &smd.List{ElementType: smd.TypeRef{NamedType: &atomic}, ElementRelationship: smd.Atomic},
			Map:    &smd.Map{ElementType: smd.TypeRef{NamedType: &deduced}, ElementRelationship: smd.Separable},
		}},
	)
	s.smd, s.smdGen = out, s.gen
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// typeRef is the SMD reference to node n: a named type (with its use's map
// type), or an inlined atom.
func (s *Set) typeRef(n *Schema, path string) (smd.TypeRef, error) {
	switch {
	case n.Ref != "":
		key := n.Ref
		ref := smd.TypeRef{NamedType: &key}
		if n.MapType == MapAtomic {
			ref.ElementRelationship = ptr(smd.Atomic)
		}
		return ref, nil
	case n.Unknown && n.AdditionalProperties == nil:
		name := untypedDeduced
		return smd.TypeRef{NamedType: &name}, nil
	}
	atom, err := s.atom(n, path)
	return smd.TypeRef{Inlined: atom}, err
}

// atom converts one node that is not a reference.
func (s *Set) atom(n *Schema, path string) (smd.Atom, error) {
	switch n.Type {
	case "string":
		return smd.Atom{Scalar: ptr(smd.String)}, nil
	case "integer", "number":
		return smd.Atom{Scalar: ptr(smd.Numeric)}, nil
	case "boolean":
		return smd.Atom{Scalar: ptr(smd.Boolean)}, nil
	case "array":
		if n.Items == nil {
			return smd.Atom{}, fmt.Errorf("schema: %s: a list without items", path)
		}
		elem, err := s.typeRef(n.Items, path+"[]")
		if err != nil {
			return smd.Atom{}, err
		}
		l := &smd.List{ElementType: elem, ElementRelationship: smd.Atomic}
		switch n.ListType {
		case ListSet:
			l.ElementRelationship = smd.Associative
		case ListMap:
			l.ElementRelationship, l.Keys = smd.Associative, n.ListMapKeys
		}
		return smd.Atom{List: l}, nil
	case "object":
		m := &smd.Map{ElementRelationship: smd.Separable}
		if n.MapType == MapAtomic {
			m.ElementRelationship = smd.Atomic
		}
		for _, p := range n.Properties {
			ref, err := s.typeRef(p.Schema, path+"."+p.Name)
			if err != nil {
				return smd.Atom{}, err
			}
			m.Fields = append(m.Fields, smd.StructField{Name: p.Name, Type: ref})
		}
		switch {
		case n.AdditionalProperties != nil:
			ref, err := s.typeRef(n.AdditionalProperties, path+"[]")
			if err != nil {
				return smd.Atom{}, err
			}
			m.ElementType = ref
		case n.Unknown:
			// A free-form object keeps whatever it is given.
			name := untypedDeduced
			m.ElementType = smd.TypeRef{NamedType: &name}
		}
		return smd.Atom{Map: m}, nil
	case "":
		if n.Unknown {
			name := untypedDeduced
			return smd.Atom{Scalar: ptr(smd.Untyped), Map: &smd.Map{ElementType: smd.TypeRef{NamedType: &name}, ElementRelationship: smd.Separable},
				List: &smd.List{ElementType: smd.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: smd.Atomic}}, nil
		}
	}
	return smd.Atom{}, fmt.Errorf("schema: %s: no merge type for %q", path, n.Type)
}
