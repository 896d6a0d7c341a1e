package k8sproto

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/meta"
)

// A Decoder reads objects of one kind from Kubernetes protobuf bodies into
// the JSON the JSON path reads, guided by the protobuf tags of the Go type
// the kind decodes into: a field tagged `protobuf:"N"` holds message field
// N (the numbers of k8s.io/api's generated.proto); untagged fields are not
// on the wire. The wire form follows from the Go type:
//
//   - string, []byte, a struct or a pointer to one: a length-delimited
//     field (a struct is a nested message, its fields merged when repeated);
//   - bool and integers: a varint; float64: a fixed64 (a proto double);
//   - a slice: a repeated field (scalars packed or not);
//   - map[string]V: repeated entries, key 1, value 2; a list as V is a
//     message holding the items in field 1 (authentication's ExtraValue);
//   - meta.Time, meta.MicroTime: the seconds (1), nanos (2) message, Go's
//     zero time (client-go's encoding of an unset Time) read as unset;
//   - json.RawMessage: apimachinery's RawExtension or apiextensions' JSON,
//     the raw JSON in field 1; tagged `protobuf:"N,as=Name"`, the message
//     of the type registered as Name (see As), turned into its JSON.
//
// The value decoded is then written by encoding/json, so omitempty, custom
// marshallers and optional pointers come out as the JSON path reads them.
type Decoder struct {
	kind  string
	typ   reflect.Type
	types map[string]reflect.Type
}

// Option configures a Decoder.
type Option func(*Decoder)

// As registers T's type as the message that json.RawMessage fields
// tagged `protobuf:"N,as=name"` hold: a CRD keeps its openAPIV3Schema as
// JSON, but the wire carries a JSONSchemaProps message.
func As[T any](name string) Option {
	return func(d *Decoder) { d.types[name] = reflect.TypeFor[T]() }
}

// NewDecoder returns the Decoder of kind, whose objects decode into T (a
// struct embedding meta.TypeMeta, which gets the envelope's apiVersion and
// kind). It panics, like regexp.MustCompile, when a protobuf tag of T's
// types is malformed or sits on a type it cannot decode into: that is a
// programming error, found by any test that builds the decoder.
func NewDecoder[T any](kind string, opts ...Option) *Decoder {
	d := &Decoder{kind: kind, typ: reflect.TypeFor[T](), types: map[string]reflect.Type{}}
	for _, o := range opts {
		o(d)
	}
	if err := d.check(d.typ, map[reflect.Type]bool{}); err != nil {
		panic(fmt.Sprintf("k8sproto.NewDecoder(%s): %v", kind, err))
	}
	return d
}

// ToJSON decodes a protobuf body (with its envelope) of the decoder's
// kind into JSON. Its errors are in kube-apiserver's words for a body it
// cannot decode; callers answer them with 400 Bad Request.
func (d *Decoder) ToJSON(body []byte) ([]byte, error) {
	apiVersion, kind, raw, err := envelope(body)
	if err == nil && kind == "" {
		err = fmt.Errorf("Object 'Kind' is missing in '%s'", raw)
	}
	if err != nil {
		return nil, fmt.Errorf("the object provided is unrecognized (must be of type %s): %v (%s)", d.kind, err, summarize(body, 30))
	}
	_, version, _ := strings.Cut(apiVersion, "/")
	if version == "" {
		version = apiVersion
	}
	cannot := func(err error) error {
		return fmt.Errorf("%s in version %q cannot be handled as a %s: %w", kind, version, d.kind, err)
	}
	if kind != d.kind {
		return nil, cannot(fmt.Errorf("the kind in the data is not %s", d.kind))
	}
	v := reflect.New(d.typ)
	if err := (&decodeState{types: d.types}).message(raw, v.Elem()); err != nil {
		return nil, cannot(err)
	}
	if o, ok := v.Interface().(interface{ GetTypeMeta() *meta.TypeMeta }); ok {
		tm := o.GetTypeMeta()
		tm.APIVersion, tm.Kind = apiVersion, kind
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, cannot(err)
	}
	return b, nil
}

// envelope checks the magic and reads the runtime.Unknown envelope: the
// TypeMeta (field 1: apiVersion 1, kind 2) and the raw object (field 2).
func envelope(body []byte) (apiVersion, kind string, raw []byte, err error) {
	switch {
	case len(body) == 0:
		return "", "", nil, errors.New("empty data")
	case !bytes.HasPrefix(body, magic):
		return "", "", nil, fmt.Errorf("provided data does not appear to be a protobuf message, expected prefix %v", magic)
	case len(body) == len(magic):
		return "", "", nil, errors.New("empty body")
	}
	env, err := parse(body[len(magic):])
	if err != nil {
		return "", "", nil, err
	}
	tm, err := parse(env.last(1))
	if err != nil {
		return "", "", nil, err
	}
	return string(tm.last(1)), string(tm.last(2)), env.last(2), nil
}

// summarize is how kube-apiserver quotes an undecodable body: up to max
// bytes, in hex unless it looks like JSON.
func summarize(data []byte, max int) string {
	more := ""
	if len(data) > max {
		data, more = data[:max], " ..."
	}
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		return string(data) + more
	default:
		return hex.EncodeToString(data) + more
	}
}

// maxDepth bounds how deep messages nest, as encoding/json bounds a JSON
// body's nesting: a recursive type (a CRD's JSONSchemaProps) must not let
// a small body exhaust the stack.
const maxDepth = 10000

var (
	timeType      = reflect.TypeFor[meta.Time]()
	microTimeType = reflect.TypeFor[meta.MicroTime]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	bytesType     = reflect.TypeFor[[]byte]()
)

// field is one tagged field of a struct.
type field struct {
	name  string // the Go name, for errors
	index int
	as    string // the registered message a json.RawMessage field holds
}

// fieldsCache maps a struct type to its fields by number.
var fieldsCache sync.Map // reflect.Type -> map[protowire.Number]field

// fieldsOf returns t's tagged fields by number.
func fieldsOf(t reflect.Type) (map[protowire.Number]field, error) {
	if f, ok := fieldsCache.Load(t); ok {
		return f.(map[protowire.Number]field), nil
	}
	fields := map[protowire.Number]field{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("protobuf")
		if !ok {
			continue
		}
		num, opts, _ := strings.Cut(tag, ",")
		n, err := strconv.Atoi(num)
		if err != nil || !protowire.Number(n).IsValid() {
			return nil, fmt.Errorf("%s.%s: bad protobuf tag %q", t, sf.Name, tag)
		}
		if _, dup := fields[protowire.Number(n)]; dup {
			return nil, fmt.Errorf("%s.%s: field number %d used twice", t, sf.Name, n)
		}
		if !sf.IsExported() {
			return nil, fmt.Errorf("%s.%s: a protobuf field must be exported", t, sf.Name)
		}
		f := field{name: sf.Name, index: i}
		if opts != "" {
			as, ok := strings.CutPrefix(opts, "as=")
			if !ok || sf.Type != rawType {
				return nil, fmt.Errorf("%s.%s: bad protobuf tag %q (as= goes on a json.RawMessage)", t, sf.Name, tag)
			}
			f.as = as
		}
		fields[protowire.Number(n)] = f
	}
	f, _ := fieldsCache.LoadOrStore(t, fields)
	return f.(map[protowire.Number]field), nil
}

// check reports a malformed tag or a type the decoder cannot fill in t or
// the types it reaches, so that NewDecoder finds it rather than a request.
func (d *Decoder) check(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	fields, err := fieldsOf(t)
	if err != nil {
		return err
	}
	for _, f := range fields {
		ft := t.Field(f.index).Type
		if f.as != "" {
			mt, ok := d.types[f.as]
			if !ok {
				return fmt.Errorf("%s.%s: no message registered as %q", t, f.name, f.as)
			}
			if err := d.check(mt, seen); err != nil {
				return err
			}
			continue
		}
		if err := d.checkValue(ft, seen); err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.name, err)
		}
	}
	return nil
}

func (d *Decoder) checkValue(t reflect.Type, seen map[reflect.Type]bool) error {
	switch {
	case t == timeType, t == microTimeType, t == rawType, t == bytesType:
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return d.checkValue(t.Elem(), seen)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Slice && t.Elem() != bytesType && t.Elem() != rawType {
			return fmt.Errorf("%s: a repeated field cannot hold lists", t)
		}
		return d.checkValue(t.Elem(), seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("%s: map keys must be strings", t)
		}
		return d.checkValue(t.Elem(), seen)
	case reflect.Struct:
		return d.check(t, seen)
	case reflect.String, reflect.Bool, reflect.Int32, reflect.Int64, reflect.Int, reflect.Uint32, reflect.Uint64, reflect.Float64:
		return nil
	}
	return fmt.Errorf("cannot decode protobuf into %s", t)
}

// decodeState carries what one decode needs through the recursion.
type decodeState struct {
	types map[string]reflect.Type
	depth int
	// field is the Go name of the field being read, which errors name
	// as the gogo-generated decoders kube-apiserver runs do.
	field string
}

var errDepth = errors.New("exceeded max depth")

// message decodes message b into the struct v, merging into what v holds.
func (s *decodeState) message(b []byte, v reflect.Value) error {
	if s.depth++; s.depth > maxDepth {
		return errDepth
	}
	defer func() { s.depth-- }()
	fields, err := fieldsOf(v.Type())
	if err != nil {
		return err
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		f, ok := fields[num]
		if !ok {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		s.field = f.name
		if n, err = s.decodeField(v.Field(f.index), f, typ, b); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// decodeField decodes one occurrence of field f, whose value starts b,
// into v; it returns the bytes it read.
func (s *decodeState) decodeField(v reflect.Value, f field, typ protowire.Type, b []byte) (int, error) {
	t := v.Type()
	switch {
	case f.as != "":
		raw, n := protowire.ConsumeBytes(b)
		if err := s.wantType(typ, protowire.BytesType, n); err != nil {
			return 0, err
		}
		mv := reflect.New(s.types[f.as])
		if err := s.message(raw, mv.Elem()); err != nil {
			return 0, err
		}
		j, err := json.Marshal(mv.Interface())
		if err != nil {
			return 0, err
		}
		v.Set(reflect.ValueOf(json.RawMessage(j)))
		return n, nil
	case t.Kind() == reflect.Slice && t != bytesType && t != rawType:
		elem := reflect.New(t.Elem()).Elem()
		if typ == protowire.BytesType && scalarWire(t.Elem()) != protowire.BytesType {
			// Packed scalars: one length-delimited run of values.
			run, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			for len(run) > 0 {
				k, err := s.value(elem, scalarWire(t.Elem()), run)
				if err != nil {
					return 0, err
				}
				v.Set(reflect.Append(v, elem))
				run = run[k:]
			}
			return n, nil
		}
		n, err := s.value(elem, typ, b)
		if err != nil {
			return 0, err
		}
		v.Set(reflect.Append(v, elem))
		return n, nil
	case t.Kind() == reflect.Map:
		entry, n := protowire.ConsumeBytes(b)
		if err := s.wantType(typ, protowire.BytesType, n); err != nil {
			return 0, err
		}
		key, val, err := s.mapEntry(entry, t)
		if err != nil {
			return 0, err
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		v.SetMapIndex(key, val)
		return n, nil
	}
	return s.value(v, typ, b)
}

// items decodes the list message b, its items in field 1, into the list v.
func (s *decodeState) items(b []byte, v reflect.Value) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if num == 1 {
			n, err := s.decodeField(v, field{name: s.field}, typ, b)
			if err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}

// mapEntry decodes a map entry message: key 1, value 2.
func (s *decodeState) mapEntry(b []byte, t reflect.Type) (key, val reflect.Value, err error) {
	key, val = reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return key, val, protowire.ParseError(n)
		}
		b = b[n:]
		switch num {
		case 1:
			n, err = s.value(key, typ, b)
		case 2:
			n, err = s.value(val, typ, b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				err = protowire.ParseError(n)
			}
		}
		if err != nil {
			return key, val, err
		}
		b = b[n:]
	}
	return key, val, nil
}

// scalarWire is the wire type of a value of type t.
func scalarWire(t reflect.Type) protowire.Type {
	switch t.Kind() {
	case reflect.Bool, reflect.Int32, reflect.Int64, reflect.Int, reflect.Uint32, reflect.Uint64:
		return protowire.VarintType
	case reflect.Float64:
		return protowire.Fixed64Type
	}
	return protowire.BytesType
}

// wantType checks a field's wire type and the result n of consuming it,
// in the words of the gogo-generated decoders kube-apiserver runs.
func (s *decodeState) wantType(got, want protowire.Type, n int) error {
	if got != want {
		return fmt.Errorf("proto: wrong wireType = %d for field %s", got, s.field)
	}
	if n < 0 {
		return protowire.ParseError(n)
	}
	return nil
}

// value decodes one value of wire type typ from b into v (not a list or a
// map); it returns the bytes it read.
func (s *decodeState) value(v reflect.Value, typ protowire.Type, b []byte) (int, error) {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return s.value(v.Elem(), typ, b)
	}
	switch scalarWire(t) {
	case protowire.VarintType:
		x, n := protowire.ConsumeVarint(b)
		if err := s.wantType(typ, protowire.VarintType, n); err != nil {
			return 0, err
		}
		switch t.Kind() {
		case reflect.Bool:
			v.SetBool(x != 0)
		case reflect.Int32:
			v.SetInt(int64(int32(x)))
		case reflect.Uint32:
			v.SetUint(uint64(uint32(x)))
		case reflect.Uint64:
			v.SetUint(x)
		default:
			v.SetInt(int64(x))
		}
		return n, nil
	case protowire.Fixed64Type:
		x, n := protowire.ConsumeFixed64(b)
		if err := s.wantType(typ, protowire.Fixed64Type, n); err != nil {
			return 0, err
		}
		v.SetFloat(math.Float64frombits(x))
		return n, nil
	}
	raw, n := protowire.ConsumeBytes(b)
	if err := s.wantType(typ, protowire.BytesType, n); err != nil {
		return 0, err
	}
	switch {
	case t == timeType, t == microTimeType:
		tm, err := timestamp(raw)
		if err != nil {
			return 0, err
		}
		v.Field(0).Set(reflect.ValueOf(tm))
	case t == rawType:
		// RawExtension and JSON: the raw bytes in field 1.
		m, err := parse(raw)
		if err != nil {
			return 0, err
		}
		if r := m.last(1); len(r) > 0 {
			v.SetBytes(bytes.Clone(r))
		}
	case t.Kind() == reflect.Struct:
		if err := s.message(raw, v); err != nil {
			return 0, err
		}
	case t.Kind() == reflect.String:
		v.SetString(string(raw))
	case t.Kind() == reflect.Slice && t != bytesType:
		// Only a map's value gets here: proto has no map of lists, so
		// generated.proto wraps the list in a message (ExtraValue), its
		// items in field 1.
		if err := s.items(raw, v); err != nil {
			return 0, err
		}
	default: // []byte
		v.SetBytes(bytes.Clone(raw))
	}
	return n, nil
}

// timestamp reads a meta/v1 Time or MicroTime message (seconds 1, nanos
// 2), in UTC. An empty message, which is how client-go writes a Time it
// was not given (apimachinery's Time.Marshal), is the zero time, as
// apimachinery's Time.Unmarshal reads it, not the Unix epoch; so is Go's
// zero time in seconds.
func timestamp(b []byte) (time.Time, error) {
	if len(b) == 0 {
		return time.Time{}, nil
	}
	m, err := parse(b)
	if err != nil {
		return time.Time{}, err
	}
	sec, nanos := m.int64(1), m.int64(2)
	if sec == zeroTimeSeconds && nanos == 0 {
		return time.Time{}, nil
	}
	if nanos < 0 || nanos >= int64(time.Second) {
		return time.Time{}, fmt.Errorf("nanos %d out of range", nanos)
	}
	return time.Unix(sec, nanos).UTC(), nil
}
