package cel

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/apikit-dev/apikit/schema/structural"
)

// FieldDefault is a top-level field JSONView shows when the struct's own
// encoding leaves it out: the apiVersion and kind an object held in memory
// may lack, which the JSON sent for it carries.
type FieldDefault struct {
	Name  string
	Value string
}

// JSONView returns v, a Go struct or a pointer to one, as CEL reads the
// JSON encoding/json writes for it decoded as structural.DecodeJSON
// decodes it: a map(string, dyn) whose fields, lists and maps are read
// from v itself as an expression selects them (JSON field names, omitempty
// and omitzero, embedded structs, null for nil pointers, slices and maps,
// int64 for integers and for floats JSON writes without a fraction,
// base64 for []byte). A value that encodes itself (a json.Marshaler or
// encoding.TextMarshaler, such as a timestamp) is read through its
// encoding. Admission expressions read a few fields of an object: encoding
// it to JSON and decoding that into maps was most of a policy's cost on a
// write.
//
// A ref.Val inside v is taken as it is. v must not change while the view
// is read. JSONView reports false, and returns nil, when v is neither a
// struct nor a pointer to one, or encodes itself: only its JSON shows it.
func JSONView(v any, defaults ...FieldDefault) (ref.Val, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil, false
	}
	s, ok := viewOf(rv).(*jsonStruct)
	if !ok {
		return nil, false
	}
	s.defaults = defaults
	return s, true
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	refValType        = reflect.TypeFor[ref.Val]()
	zeroerType        = reflect.TypeFor[interface{ IsZero() bool }]()
)

// typeKinds caches, per type, how JSONView reads a value of it.
var typeKinds sync.Map // reflect.Type -> *typeKind

type typeKind struct {
	// refVal: a ref.Val, taken as is.
	refVal bool
	// encodes: the type encodes itself; ptrEncodes: its pointer does,
	// which encoding/json calls on addressable values.
	encodes, ptrEncodes bool
	// bytes: a []byte that JSON writes in base64.
	bytes bool
	// stringKeys: a map whose keys are strings.
	stringKeys bool
	// fields: a struct's fields; nil when it has a ",string" field,
	// which the struct's JSON then shows.
	fields *structFields
}

func kindOf(t reflect.Type) *typeKind {
	if k, ok := typeKinds.Load(t); ok {
		return k.(*typeKind)
	}
	k := &typeKind{
		refVal:     t.Implements(refValType),
		encodes:    t.Implements(marshalerType) || t.Implements(textMarshalerType),
		stringKeys: t.Kind() == reflect.Map && t.Key().Kind() == reflect.String,
	}
	if t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		k.ptrEncodes = pt.Implements(marshalerType) || pt.Implements(textMarshalerType)
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		pe := reflect.PointerTo(t.Elem())
		k.bytes = !pe.Implements(marshalerType) && !pe.Implements(textMarshalerType)
	}
	if t.Kind() == reflect.Struct {
		k.fields = fieldsOf(t)
	}
	actual, _ := typeKinds.LoadOrStore(t, k)
	return actual.(*typeKind)
}

// viewOf returns the CEL value of v's JSON encoding.
func viewOf(v reflect.Value) ref.Val {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return types.NullValue
		}
	}
	return viewWith(v, kindOf(v.Type()))
}

// viewWith is viewOf with v's typeKind known; v is not a nil pointer or
// interface.
func viewWith(v reflect.Value, k *typeKind) ref.Val {
	switch {
	case k.refVal:
		return v.Interface().(ref.Val)
	case k.encodes || k.ptrEncodes && v.CanAddr():
		return encoded(v)
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		return viewOf(v.Elem())
	case reflect.Bool:
		return types.Bool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return types.Int(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := v.Uint(); u <= math.MaxInt64 {
			return types.Int(int64(u))
		} else {
			// The decoder reads an integer beyond int64 as a float.
			return types.Double(float64(u))
		}
	case reflect.Float32:
		return jsonNumber(v.Float(), 32)
	case reflect.Float64:
		return jsonNumber(v.Float(), 64)
	case reflect.String:
		return types.String(validUTF8(v.String()))
	case reflect.Slice:
		if v.IsNil() {
			return types.NullValue
		}
		if k.bytes {
			return types.String(base64.StdEncoding.EncodeToString(v.Bytes()))
		}
		return &jsonList{v: v}
	case reflect.Array:
		return &jsonList{v: v}
	case reflect.Map:
		if v.IsNil() {
			return types.NullValue
		}
		if !k.stringKeys || !validKeys(v) {
			return encoded(v)
		}
		return &jsonMap{v: v}
	case reflect.Struct:
		if k.fields == nil {
			return encoded(v)
		}
		return &jsonStruct{v: v, fields: k.fields}
	}
	return types.NewErr("json: unsupported type: %s", v.Type())
}

// encoded is v read through its JSON, for what writes its own encoding
// and what is rare enough not to be read directly.
func encoded(v reflect.Value) ref.Val {
	var x any
	if v.CanAddr() {
		x = v.Addr().Interface()
	} else {
		x = v.Interface()
	}
	// A timestamp is a JSON string: taken as it is, without encoding/json
	// checking and copying it and the decoder reading it back.
	if m, ok := x.(json.Marshaler); ok {
		if data, err := m.MarshalJSON(); err == nil {
			if s, ok := plainString(data); ok {
				return types.String(s)
			}
		}
	}
	data, err := json.Marshal(x)
	if err != nil {
		return types.NewErr("%v", err)
	}
	j, err := structural.DecodeJSON(data)
	if err != nil {
		return types.NewErr("%v", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(j)
}

// plainString returns the string a JSON string literal holds when it has
// no escapes, control characters or invalid UTF-8: what it decodes to.
func plainString(data []byte) (string, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return "", false
	}
	s := data[1 : len(data)-1]
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// jsonNumber is a float as encoding/json writes it and the decoder reads
// it back: an int64 when it is written without a fraction or exponent.
func jsonNumber(f float64, bits int) ref.Val {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return types.NewErr("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, bits))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	s := strconv.FormatFloat(f, format, -1, bits)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return types.Int(i)
	}
	d, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return types.NewErr("decoding JSON: number %s does not fit in a float64", s)
	}
	return types.Double(d)
}

// validUTF8 is s as JSON carries it: each byte of invalid UTF-8 replaced
// by U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// validKeys reports whether a string-keyed map's keys are valid UTF-8;
// otherwise its JSON may merge keys, and only the JSON shows it.
func validKeys(v reflect.Value) bool {
	for it := v.MapRange(); it.Next(); {
		if !utf8.ValidString(it.Key().String()) {
			return false
		}
	}
	return true
}

// structFields are a struct type's JSON fields, as encoding/json finds
// them: tagged names, embedded structs' fields promoted by Go's rules
// (the shallowest wins, a tagged one among equals, none when still tied).
type structFields struct {
	list   []structField
	byName map[string]int
}

type structField struct {
	name                string
	index               []int
	tagged              bool
	omitEmpty, omitZero bool
	isZero              func(reflect.Value) bool
	// kind is the field's typeKind when its type is neither a pointer
	// nor an interface (whose values' kinds are found as they are read).
	kind *typeKind
}

func fieldsOf(t reflect.Type) *structFields {
	type level struct {
		typ   reflect.Type
		index []int
	}
	var found []structField
	next := []level{{typ: t}}
	visited := map[reflect.Type]bool{}
	// How often each type was embedded at the level being read, and at
	// the next.
	var count, nextCount map[reflect.Type]int
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				ft := sf.Type
				if sf.Anonymous {
					et := ft
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clip(l.index), i)
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if hasOption(opts, "string") {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						// A quoted field: the struct's JSON shows it.
						return nil
					}
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					nextCount[ft]++
					if nextCount[ft] == 1 {
						next = append(next, level{typ: ft, index: index})
					}
					continue
				}
				f := structField{name: name, index: index, tagged: name != "",
					omitEmpty: hasOption(opts, "omitempty"), omitZero: hasOption(opts, "omitzero")}
				if f.name == "" {
					f.name = sf.Name
				}
				if f.omitZero {
					f.isZero = zeroTest(sf.Type)
				}
				// A struct cannot hold itself by value: this ends.
				if k := sf.Type.Kind(); k != reflect.Pointer && k != reflect.Interface {
					f.kind = kindOf(sf.Type)
				}
				found = append(found, f)
				if count[l.typ] > 1 {
					// The same embedded type twice at one depth: its
					// fields annihilate each other.
					found = append(found, f)
				}
			}
		}
	}
	slices.SortStableFunc(found, func(a, b structField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var out []structField
	for i := 0; i < len(found); {
		j := i + 1
		for j < len(found) && found[j].name == found[i].name {
			j++
		}
		if f, ok := dominant(found[i:j]); ok {
			out = append(out, f)
		}
		i = j
	}
	slices.SortFunc(out, func(a, b structField) int { return slices.Compare(a.index, b.index) })
	sf := &structFields{list: out, byName: make(map[string]int, len(out))}
	for i, f := range out {
		sf.byName[f.name] = i
	}
	return sf
}

// dominant is the field of a name that hides the others, sorted by depth
// then tag: the only shallowest, or the only tagged shallowest.
func dominant(fs []structField) (structField, bool) {
	if len(fs) > 1 && len(fs[0].index) == len(fs[1].index) && fs[0].tagged == fs[1].tagged {
		return structField{}, false
	}
	return fs[0], true
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// validTag is encoding/json's test of a tag's name.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// zeroTest is omitzero's test for a field of type t: its IsZero method
// when it has one, else the zero value.
func zeroTest(t reflect.Type) func(reflect.Value) bool {
	type zeroer = interface{ IsZero() bool }
	switch {
	case t.Kind() == reflect.Interface && t.Implements(zeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil() || v.Interface().(zeroer).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(zeroerType):
		return func(v reflect.Value) bool { return v.IsNil() || v.Interface().(zeroer).IsZero() }
	case t.Implements(zeroerType):
		return func(v reflect.Value) bool { return v.Interface().(zeroer).IsZero() }
	case reflect.PointerTo(t).Implements(zeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				v = c
			}
			return v.Addr().Interface().(zeroer).IsZero()
		}
	}
	return reflect.Value.IsZero
}

// empty is omitempty's test.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// jsonStruct is a struct as the JSON object it encodes to.
type jsonStruct struct {
	v        reflect.Value
	fields   *structFields
	defaults []FieldDefault
}

// at returns field i's value and whether the JSON has it.
func (s *jsonStruct) at(i int) (reflect.Value, bool) {
	f := &s.fields.list[i]
	v := s.v
	for _, x := range f.index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	if f.omitEmpty && empty(v) || f.omitZero && f.isZero(v) {
		return reflect.Value{}, false
	}
	return v, true
}

func (s *jsonStruct) has(name string) bool {
	i, ok := s.fields.byName[name]
	if !ok {
		return false
	}
	_, ok = s.at(i)
	return ok
}

// keys are the names the JSON object has, in encoding order.
func (s *jsonStruct) keys() []string {
	ks := make([]string, 0, len(s.fields.list)+len(s.defaults))
	for _, d := range s.defaults {
		if !s.has(d.Name) {
			ks = append(ks, d.Name)
		}
	}
	for i := range s.fields.list {
		if _, ok := s.at(i); ok {
			ks = append(ks, s.fields.list[i].name)
		}
	}
	return ks
}

func (s *jsonStruct) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	if i, ok := s.fields.byName[string(k)]; ok {
		if v, ok := s.at(i); ok {
			if kind := s.fields.list[i].kind; kind != nil {
				return viewWith(v, kind), true
			}
			return viewOf(v), true
		}
	}
	for _, d := range s.defaults {
		if d.Name == string(k) {
			return types.String(d.Value), true
		}
	}
	return nil, false
}

func (s *jsonStruct) Get(key ref.Val) ref.Val      { return mapGet(s, key) }
func (s *jsonStruct) Contains(key ref.Val) ref.Val { return types.Bool(mapHas(s, key)) }

func (s *jsonStruct) Size() ref.Val { return types.Int(len(s.keys())) }

func (s *jsonStruct) IsZeroValue() bool { return len(s.keys()) == 0 }

func (s *jsonStruct) Iterator() traits.Iterator { return &keyIterator{keys: s.keys()} }

func (s *jsonStruct) Equal(other ref.Val) ref.Val { return mapEqual(s, other) }

func (s *jsonStruct) ConvertToNative(t reflect.Type) (any, error) { return mapToNative(s, t) }

func (s *jsonStruct) ConvertToType(t ref.Type) ref.Val { return mapToType(s, t) }

func (s *jsonStruct) Type() ref.Type { return types.MapType }

// Value is the JSON object, built whole.
func (s *jsonStruct) Value() any { return valueOf(s) }

// jsonMap is a string-keyed map as the JSON object it encodes to.
type jsonMap struct{ v reflect.Value }

func (m *jsonMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	// Labels and annotations, without reflection's allocations.
	if ss, ok := stringMap(m.v); ok {
		s, found := ss[string(k)]
		if !found {
			return nil, false
		}
		return types.String(validUTF8(s)), true
	}
	e := m.v.MapIndex(reflect.ValueOf(string(k)).Convert(m.v.Type().Key()))
	if !e.IsValid() {
		return nil, false
	}
	return viewOf(e), true
}

func (m *jsonMap) Get(key ref.Val) ref.Val      { return mapGet(m, key) }
func (m *jsonMap) Contains(key ref.Val) ref.Val { return types.Bool(mapHas(m, key)) }

func (m *jsonMap) Size() ref.Val     { return types.Int(m.v.Len()) }
func (m *jsonMap) IsZeroValue() bool { return m.v.Len() == 0 }

func (m *jsonMap) Iterator() traits.Iterator {
	ks := make([]string, 0, m.v.Len())
	for it := m.v.MapRange(); it.Next(); {
		ks = append(ks, it.Key().String())
	}
	return &keyIterator{keys: ks}
}

func (m *jsonMap) Equal(other ref.Val) ref.Val                 { return mapEqual(m, other) }
func (m *jsonMap) ConvertToNative(t reflect.Type) (any, error) { return mapToNative(m, t) }
func (m *jsonMap) ConvertToType(t ref.Type) ref.Val            { return mapToType(m, t) }
func (m *jsonMap) Type() ref.Type                              { return types.MapType }

// Value is the JSON object, built whole.
func (m *jsonMap) Value() any { return valueOf(m) }

func stringMap(v reflect.Value) (map[string]string, bool) {
	if !v.CanInterface() {
		return nil, false
	}
	m, ok := v.Interface().(map[string]string)
	return m, ok
}

// mapGet is cel-go's indexing of a map: the value, or no such key.
func mapGet(m traits.Mapper, key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		return types.NewErr("no such key: %v", key)
	}
	return v
}

func mapHas(m traits.Mapper, key ref.Val) bool {
	_, found := m.Find(key)
	return found
}

// valueOf is a view's JSON value; nil when reading it fails (an
// expression reading the same place gets the error).
func valueOf(v ref.Val) any {
	j, _ := jsonOf(v)
	return j
}

// mapEqual is cel-go's equality of maps: the same keys, and values not
// unequal.
func mapEqual(m traits.Mapper, other ref.Val) ref.Val {
	o, ok := other.(traits.Mapper)
	if !ok || m.Size() != o.Size() {
		return types.False
	}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		mine, _ := m.Find(k)
		theirs, found := o.Find(k)
		if !found || types.Equal(mine, theirs) == types.False {
			return types.False
		}
	}
	return types.True
}

func mapToNative(m ref.Val, t reflect.Type) (any, error) {
	v, err := jsonOf(m)
	if err != nil {
		return nil, err
	}
	obj, _ := v.(map[string]any)
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, obj).ConvertToNative(t)
}

func mapToType(m ref.Val, t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", types.MapType, t)
}

// jsonList is a slice or array as the JSON array it encodes to.
type jsonList struct{ v reflect.Value }

func (l *jsonList) Size() ref.Val     { return types.Int(l.v.Len()) }
func (l *jsonList) IsZeroValue() bool { return l.v.Len() == 0 }

func (l *jsonList) Get(index ref.Val) ref.Val {
	i, err := types.IndexOrError(index)
	if err != nil {
		return types.ValOrErr(index, "%v", err)
	}
	if i < 0 || i >= l.v.Len() {
		return types.NewErr("index '%d' out of range in list size '%d'", i, l.v.Len())
	}
	return viewOf(l.v.Index(i))
}

func (l *jsonList) Contains(elem ref.Val) ref.Val {
	for i := range l.v.Len() {
		if elem.Equal(viewOf(l.v.Index(i))) == types.True {
			return types.True
		}
	}
	return types.False
}

func (l *jsonList) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok || l.Size() != o.Size() {
		return types.False
	}
	for i := range l.v.Len() {
		if types.Equal(viewOf(l.v.Index(i)), o.Get(types.Int(i))) == types.False {
			return types.False
		}
	}
	return types.True
}

func (l *jsonList) Add(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	elems := make([]ref.Val, 0, l.v.Len())
	for i := range l.v.Len() {
		elems = append(elems, viewOf(l.v.Index(i)))
	}
	return types.NewRefValList(types.DefaultTypeAdapter, append(elems, listElems(o)...))
}

func (l *jsonList) Iterator() traits.Iterator { return &jsonListIterator{l: l} }

func (l *jsonList) ConvertToNative(t reflect.Type) (any, error) {
	v, err := jsonOf(l)
	if err != nil {
		return nil, err
	}
	return types.NewDynamicList(types.DefaultTypeAdapter, v).ConvertToNative(t)
}

func (l *jsonList) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.ListType:
		return l
	case types.TypeType:
		return types.ListType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", types.ListType, t)
}

func (l *jsonList) Type() ref.Type { return types.ListType }

// Value is the JSON array, built whole.
func (l *jsonList) Value() any { return valueOf(l) }

type jsonListIterator struct {
	iteratorVal
	l *jsonList
	i int
}

func (it *jsonListIterator) HasNext() ref.Val { return types.Bool(it.i < it.l.v.Len()) }
func (it *jsonListIterator) Next() ref.Val {
	if it.i >= it.l.v.Len() {
		return nil
	}
	v := viewOf(it.l.v.Index(it.i))
	it.i++
	return v
}

// jsonOf is a view's JSON value (map[string]any, []any, string, bool,
// nil, int64 or float64), built whole, for what needs Go values: a
// mutation's patch or apply configuration, a conversion to JSON.
func jsonOf(v ref.Val) (any, error) {
	switch x := v.(type) {
	case *jsonStruct:
		out := make(map[string]any, len(x.fields.list))
		for _, k := range x.keys() {
			e, err := jsonOf(x.Get(types.String(k)))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = e
		}
		return out, nil
	case *jsonMap:
		out := make(map[string]any, x.v.Len())
		for it := x.v.MapRange(); it.Next(); {
			e, err := jsonOf(viewOf(it.Value()))
			if err != nil {
				return nil, err
			}
			out[it.Key().String()] = e
		}
		return out, nil
	case *jsonList:
		out := make([]any, x.v.Len())
		for i := range out {
			e, err := jsonOf(viewOf(x.v.Index(i)))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case *types.Err:
		return nil, x
	case types.Null:
		return nil, nil
	case types.String:
		return string(x), nil
	case types.Int:
		return int64(x), nil
	case types.Double:
		return float64(x), nil
	case types.Bool:
		return bool(x), nil
	}
	// A value read through its JSON holds JSON values.
	return v.Value(), nil
}

var (
	_ traits.Mapper = (*jsonStruct)(nil)
	_ traits.Mapper = (*jsonMap)(nil)
	_ traits.Lister = (*jsonList)(nil)
	_ traits.Zeroer = (*jsonStruct)(nil)
)
