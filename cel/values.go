package cel

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/apikit-dev/apikit/cel/library"
	"github.com/apikit-dev/apikit/schema"
)

// toVal converts a JSON value to the CEL value its schema node declares.
// Objects, maps and lists convert lazily, one element at a time, so a rule
// reading one field of a large object pays for that field only.
func toVal(v any, t *declType) ref.Val {
	if v == nil {
		return types.NullValue
	}
	if t == nil {
		return types.DefaultTypeAdapter.NativeToValue(v)
	}
	switch t.kind {
	case kindObject:
		if m, ok := v.(map[string]any); ok {
			return &objectVal{t: t, m: m}
		}
	case kindMap:
		if m, ok := v.(map[string]any); ok {
			return &mapVal{t: t, m: m}
		}
	case kindList:
		if l, ok := v.([]any); ok {
			return &listVal{t: t, l: l}
		}
	case kindBytes:
		if s, ok := v.(string); ok {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return types.NewErr("byte string %q is not base64-encoded: %v", s, err)
			}
			return types.Bytes(b)
		}
	case kindDuration:
		if s, ok := v.(string); ok {
			d, err := parseDuration(s)
			if err != nil {
				return types.NewErr("Invalid duration %s: %v", s, err)
			}
			return types.Duration{Duration: d}
		}
	case kindDate:
		if s, ok := v.(string); ok {
			d, err := time.Parse(time.DateOnly, s)
			if err != nil {
				return types.NewErr("Invalid date formatted string %s: %v", s, err)
			}
			return types.Timestamp{Time: d}
		}
	case kindDateTime:
		if s, ok := v.(string); ok {
			d, err := library.ParseDateTime(s)
			if err != nil {
				return types.NewErr("Invalid date-time formatted string %s: %v", s, err)
			}
			return types.Timestamp{Time: d}
		}
	case kindDouble:
		// JSON's 1 is an integer to the decoder but a number to the schema.
		if i, ok := v.(int64); ok {
			return types.Double(float64(i))
		}
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// durationUnits extend Go's with the day and week strfmt accepts.
var durationUnits = map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour}

// parseDuration parses an OpenAPI duration as strfmt does: Go's syntax, or
// a number and a unit including d and w.
func parseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	var n int64
	var unit string
	if _, err := fmt.Sscanf(s, "%d%s", &n, &unit); err == nil {
		if u, ok := durationUnits[unit]; ok {
			return time.Duration(n) * u, nil
		}
	}
	return 0, fmt.Errorf("unable to parse %q as a duration", s)
}

// objectVal is a schema object: its declared, escapable properties are its
// fields.
type objectVal struct {
	t *declType
	m map[string]any
}

func (o *objectVal) field(key ref.Val) (*declField, any, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, nil, false
	}
	f, ok := o.t.fields[string(k)]
	if !ok {
		return nil, nil, false
	}
	v, ok := o.m[f.name]
	return f, v, ok
}

func (o *objectVal) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(o.m).AssignableTo(t) {
		return o.m, nil
	}
	return nil, fmt.Errorf("type conversion error from object to '%v'", t)
}

func (o *objectVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return o.t.celType
	}
	if t.TypeName() == o.t.celType.TypeName() {
		return o
	}
	return types.NewErr("type conversion error from '%s' to '%s'", o.t.celType, t)
}

func (o *objectVal) Equal(other ref.Val) ref.Val {
	p, ok := other.(*objectVal)
	if !ok {
		return types.False
	}
	for _, f := range o.t.fields {
		a, aok := o.m[f.name]
		b, bok := p.m[f.name]
		if aok != bok {
			return types.False
		}
		if aok && toVal(a, f.typ).Equal(toVal(b, f.typ)) != types.True {
			return types.False
		}
	}
	return types.True
}

func (o *objectVal) Type() ref.Type { return o.t.celType }
func (o *objectVal) Value() any     { return o.m }

func (o *objectVal) Contains(key ref.Val) ref.Val {
	_, _, ok := o.field(key)
	return types.Bool(ok)
}

func (o *objectVal) Get(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found {
		return types.NewErr("no such key: %v", key)
	}
	return v
}

func (o *objectVal) Find(key ref.Val) (ref.Val, bool) {
	f, v, ok := o.field(key)
	if !ok {
		return nil, false
	}
	return toVal(v, f.typ), true
}

// IsSet implements traits.FieldTester, for has().
func (o *objectVal) IsSet(field ref.Val) ref.Val { return o.Contains(field) }

func (o *objectVal) keys() []string {
	ks := make([]string, 0, len(o.t.fields))
	for esc, f := range o.t.fields {
		if _, ok := o.m[f.name]; ok {
			ks = append(ks, esc)
		}
	}
	slices.Sort(ks)
	return ks
}

func (o *objectVal) Iterator() traits.Iterator { return &keyIterator{keys: o.keys()} }
func (o *objectVal) Size() ref.Val             { return types.Int(len(o.keys())) }

// mapVal is a schema map (additionalProperties).
type mapVal struct {
	t *declType
	m map[string]any
}

func (m *mapVal) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(m.m).AssignableTo(t) {
		return m.m, nil
	}
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, m.m).ConvertToNative(t)
}

func (m *mapVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.TypeType:
		return m.t.celType
	case types.MapType:
		return m
	}
	return types.NewErr("type conversion error from '%s' to '%s'", m.t.celType, t)
}

func (m *mapVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Mapper)
	if !ok {
		return types.False
	}
	if o.Size() != types.Int(len(m.m)) {
		return types.False
	}
	for k, v := range m.m {
		ov, found := o.Find(types.String(k))
		if !found || toVal(v, m.t.elem).Equal(ov) != types.True {
			return types.False
		}
	}
	return types.True
}

func (m *mapVal) Type() ref.Type { return m.t.celType }
func (m *mapVal) Value() any     { return m.m }

func (m *mapVal) Contains(key ref.Val) ref.Val {
	_, found := m.Find(key)
	return types.Bool(found)
}

func (m *mapVal) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		return types.NewErr("no such key: %v", key)
	}
	return v
}

func (m *mapVal) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	v, ok := m.m[string(k)]
	if !ok {
		return nil, false
	}
	return toVal(v, m.t.elem), true
}

func (m *mapVal) Iterator() traits.Iterator {
	ks := make([]string, 0, len(m.m))
	for k := range m.m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return &keyIterator{keys: ks}
}

func (m *mapVal) Size() ref.Val { return types.Int(len(m.m)) }

type keyIterator struct {
	iteratorVal
	keys []string
	i    int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }
func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	k := it.keys[it.i]
	it.i++
	return types.String(k)
}

// iteratorVal gives iterators the ref.Val methods no expression can call.
type iteratorVal struct{}

func (iteratorVal) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion on iterators not supported")
}
func (iteratorVal) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }
func (iteratorVal) Equal(ref.Val) ref.Val          { return types.NewErr("no such overload") }
func (iteratorVal) Type() ref.Type                 { return types.IteratorType }
func (iteratorVal) Value() any                     { return nil }

// listVal is a schema list. Its x-kubernetes-list-type decides equality
// and concatenation, as in kube: a set ignores order and a concatenation
// adds only new elements; a map list compares and merges by its keys.
type listVal struct {
	t *declType
	l []any
}

func (l *listVal) listType() schema.ListType { return l.t.schema.ListType }

func (l *listVal) at(i int) ref.Val { return toVal(l.l[i], l.t.elem) }

func (l *listVal) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(l.l).AssignableTo(t) {
		return l.l, nil
	}
	return types.NewDynamicList(types.DefaultTypeAdapter, l.l).ConvertToNative(t)
}

func (l *listVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.TypeType:
		return l.t.celType
	case types.ListType:
		return l
	}
	return types.NewErr("type conversion error from '%s' to '%s'", l.t.celType, t)
}

func (l *listVal) Type() ref.Type { return l.t.celType }
func (l *listVal) Value() any     { return l.l }
func (l *listVal) Size() ref.Val  { return types.Int(len(l.l)) }

func (l *listVal) Get(index ref.Val) ref.Val {
	i, err := types.IndexOrError(index)
	if err != nil {
		return types.WrapErr(err)
	}
	if i < 0 || i >= len(l.l) {
		return types.NewErr("index '%d' out of range in list size '%d'", i, len(l.l))
	}
	return l.at(i)
}

func (l *listVal) Contains(v ref.Val) ref.Val {
	for i := range l.l {
		if l.at(i).Equal(v) == types.True {
			return types.True
		}
	}
	return types.False
}

func (l *listVal) Iterator() traits.Iterator { return &listIterator{l: l} }

// mapKey is the key of a map list's element: its key fields' values.
func (l *listVal) mapKey(v ref.Val) (ref.Val, bool) {
	m, ok := v.(traits.Mapper)
	if !ok {
		return nil, false
	}
	key := make([]ref.Val, len(l.t.schema.ListMapKeys))
	for i, k := range l.t.schema.ListMapKeys {
		esc, _ := Escape(k)
		key[i], ok = m.Find(types.String(esc))
		if !ok {
			key[i] = types.NullValue
		}
	}
	return types.NewRefValList(types.DefaultTypeAdapter, key), true
}

func (l *listVal) indexOf(elems []ref.Val, v ref.Val) int {
	if l.listType() == schema.ListMap {
		k, ok := l.mapKey(v)
		if ok {
			for i, e := range elems {
				if ek, ok := l.mapKey(e); ok && ek.Equal(k) == types.True {
					return i
				}
			}
			return -1
		}
	}
	for i, e := range elems {
		if e.Equal(v) == types.True {
			return i
		}
	}
	return -1
}

func (l *listVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok || o.Size() != types.Int(len(l.l)) {
		return types.False
	}
	switch l.listType() {
	case schema.ListSet, schema.ListMap:
		theirs := listElems(o)
		for i := range l.l {
			mine := l.at(i)
			j := l.indexOf(theirs, mine)
			if j < 0 || theirs[j].Equal(mine) != types.True {
				return types.False
			}
		}
		return types.True
	}
	for i := range l.l {
		if l.at(i).Equal(o.Get(types.Int(i))) != types.True {
			return types.False
		}
	}
	return types.True
}

func listElems(l traits.Lister) []ref.Val {
	var out []ref.Val
	for it := l.Iterator(); it.HasNext() == types.True; {
		out = append(out, it.Next())
	}
	return out
}

func (l *listVal) Add(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	elems := listElems(l)
	switch l.listType() {
	case schema.ListSet:
		for _, e := range listElems(o) {
			if l.indexOf(elems, e) < 0 {
				elems = append(elems, e)
			}
		}
	case schema.ListMap:
		for _, e := range listElems(o) {
			if i := l.indexOf(elems, e); i >= 0 {
				elems[i] = e
			} else {
				elems = append(elems, e)
			}
		}
	default:
		elems = append(elems, listElems(o)...)
	}
	return types.NewRefValList(types.DefaultTypeAdapter, elems)
}

type listIterator struct {
	iteratorVal
	l *listVal
	i int
}

func (it *listIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.l.l)) }
func (it *listIterator) Next() ref.Val {
	if it.i >= len(it.l.l) {
		return nil
	}
	v := it.l.at(it.i)
	it.i++
	return v
}

var (
	_ traits.Mapper      = (*objectVal)(nil)
	_ traits.FieldTester = (*objectVal)(nil)
	_ traits.Mapper      = (*mapVal)(nil)
	_ traits.Lister      = (*listVal)(nil)
)
