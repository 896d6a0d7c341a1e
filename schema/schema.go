package schema

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Schema is one node of a structural schema: a scalar, an object with
// properties, a map (additionalProperties), a list (items), a reference to
// a named schema of the same Set, or any JSON value.
type Schema struct {
	// Type is "object", "array", "string", "integer", "number" or
	// "boolean"; empty for a reference or any value.
	Type   string
	Format string
	// Description documents the node; on a reference it documents the
	// use, not the named type.
	Description      string
	Default          any
	Enum             []any
	Minimum, Maximum *float64
	Nullable         bool

	// Properties are an object's fields, in declaration order; Required
	// names those a client must send.
	Properties []Property
	Required   []string
	// AdditionalProperties is the value of a map.
	AdditionalProperties *Schema
	// AdditionalPropertiesAllowed is set when a CRD's schema gives
	// additionalProperties as a boolean rather than a schema: kube keeps
	// such a map's keys (false makes each a forbidden property) and prunes
	// their values as unknown. true also sets Unknown.
	AdditionalPropertiesAllowed *bool
	// Items is the element of a list.
	Items *Schema

	// Ref is the key (in the Set) of the named schema this node stands for.
	Ref string

	// Unknown marks a node that holds any JSON value
	// (x-kubernetes-preserve-unknown-fields).
	Unknown bool

	// ListType is a list's merge semantics: ListAtomic (the default),
	// ListSet or ListMap (keyed by ListMapKeys).
	ListType    ListType
	ListMapKeys []string
	// MapType is a map's or struct's: MapGranular (the default) or
	// MapAtomic.
	MapType MapType
	// PatchStrategy and PatchMergeKey are the strategic-merge-patch tags,
	// published for client-side apply.
	PatchStrategy string
	PatchMergeKey string
	// ImpliedListType is true when ListType was derived from the patch
	// tags rather than set by a listType tag.
	ImpliedListType bool

	// The OpenAPI v3 value validations a CustomResourceDefinition may
	// state; nil or zero where the schema states none.
	ExclusiveMinimum, ExclusiveMaximum bool
	MultipleOf                         *float64
	MinLength, MaxLength               *int64
	Pattern                            string
	MinItems, MaxItems                 *int64
	UniqueItems                        bool
	MinProperties, MaxProperties       *int64
	// AllOf, AnyOf, OneOf and Not hold value validations only: a
	// structural schema states types and properties at the node itself.
	AllOf, AnyOf, OneOf []*Schema
	Not                 *Schema

	// IntOrString marks a node that holds an integer or a string
	// (x-kubernetes-int-or-string).
	IntOrString bool
	// EmbeddedResource marks an object that is a whole Kubernetes object
	// with apiVersion, kind and metadata (x-kubernetes-embedded-resource).
	EmbeddedResource bool
	// Validations are the node's CEL rules (x-kubernetes-validations).
	Validations []ValidationRule
}

// ValidationRule is one entry of x-kubernetes-validations: a CEL
// expression over self (and oldSelf, for a transition rule) that must be
// true, with what to tell the client when it is not.
type ValidationRule struct {
	Rule              string `json:"rule"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
	// Reason is FieldValueInvalid (the default), FieldValueForbidden,
	// FieldValueRequired or FieldValueDuplicate.
	Reason    string `json:"reason,omitempty"`
	FieldPath string `json:"fieldPath,omitempty"`
	// OptionalOldSelf makes a transition rule run on create as well,
	// with oldSelf an optional that has no value.
	OptionalOldSelf *bool `json:"optionalOldSelf,omitempty"`
}

// Property is a named field of an object.
type Property struct {
	Name   string
	Schema *Schema
}

// ListType is how a list merges.
type ListType string

// List types, as x-kubernetes-list-type names them.
const (
	ListAtomic ListType = "atomic"
	ListSet    ListType = "set"
	ListMap    ListType = "map"
)

// MapType is how a map or struct merges.
type MapType string

// Map types, as x-kubernetes-map-type names them.
const (
	MapGranular MapType = "granular"
	MapAtomic   MapType = "atomic"
)

// Property returns the property called name.
func (s *Schema) Property(name string) (*Schema, bool) {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema, true
		}
	}
	return nil, false
}

// IsRequired reports whether the property called name is required.
func (s *Schema) IsRequired(name string) bool { return slices.Contains(s.Required, name) }

// Set holds named schemas, each under a key. Schemas reflected from Go
// types are keyed by their package path and name; renderers such as
// server/openapi give them their published names. A Set is safe for
// concurrent use; the schemas it hands out must not be modified.
type Set struct {
	mu    sync.RWMutex
	named map[string]*Schema
	types map[string]reflect.Type
	keys  map[reflect.Type]string
	// gen counts the schemas filed; smd is the SMD conversion of the Set
	// when it held smdGen of them. Every resource's field managers convert
	// the Set they are built from: one conversion serves them all until a
	// schema is added.
	gen    uint64
	smdMu  sync.Mutex
	smd    *smd.Schema
	smdGen uint64
}

// NewSet returns an empty Set.
func NewSet() *Set {
	return &Set{named: map[string]*Schema{}, types: map[string]reflect.Type{}, keys: map[reflect.Type]string{}}
}

// Named returns the schema filed under key.
func (s *Set) Named(key string) (*Schema, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.named[key]
	return n, ok
}

// GoType returns the Go type the schema under key was reflected from.
func (s *Set) GoType(key string) (reflect.Type, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.types[key]
	return t, ok
}

// Keys lists the keys of the named schemas, sorted.
func (s *Set) Keys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.named))
	for k := range s.named {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Resolve follows a reference to its named schema; other nodes are
// returned as they are.
func (s *Set) Resolve(n *Schema) (*Schema, error) {
	if n == nil || n.Ref == "" {
		return n, nil
	}
	named, ok := s.Named(n.Ref)
	if !ok {
		return nil, fmt.Errorf("schema: %q is referenced but not defined", n.Ref)
	}
	return named, nil
}

// Add files a named schema under key, as a CRD's schema is added; a key
// already in use is an error.
func (s *Set) Add(key string, n *Schema) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.named[key]; ok {
		return fmt.Errorf("schema: %q is already defined", key)
	}
	s.named[key] = n
	s.gen++
	return nil
}
