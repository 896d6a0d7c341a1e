// Package k8sproto reads the Kubernetes protobuf encoding of the built-in
// kinds apikit serves, which client-go's typed clients, and so kubectl and
// operators, post as protobuf: the "k8s\x00" magic, the runtime.Unknown
// envelope, and the messages' fields by number, as in k8s.io/api's
// generated.proto files. Decoders turn them into JSON, so that the server
// decodes and validates as it does for JSON: a Decoder by the protobuf
// tags of the Go type a kind decodes into, or a hand-written reader over
// Message.
package k8sproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// magic starts every Kubernetes protobuf body.
var magic = []byte("k8s\x00")

// Message is one parsed protobuf message: each field's values, in order,
// as raw bytes (length-delimited fields) or varints.
type Message struct {
	bytes   map[protowire.Number][][]byte
	varints map[protowire.Number][]uint64
}

// Parse parses a message.
func Parse(b []byte) (Message, error) {
	m := Message{bytes: map[protowire.Number][][]byte{}, varints: map[protowire.Number][]uint64{}}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return m, protowire.ParseError(n)
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return m, protowire.ParseError(n)
			}
			m.bytes[num] = append(m.bytes[num], v)
			b = b[n:]
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return m, protowire.ParseError(n)
			}
			m.varints[num] = append(m.varints[num], v)
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return m, protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return m, nil
}

// Has reports whether field n is present.
func (m Message) Has(n protowire.Number) bool { return len(m.bytes[n]) > 0 || len(m.varints[n]) > 0 }

// String returns the last value of string field n.
func (m Message) String(n protowire.Number) string {
	if v := m.bytes[n]; len(v) > 0 {
		return string(v[len(v)-1])
	}
	return ""
}

// Strings returns the values of repeated string field n.
func (m Message) Strings(n protowire.Number) []string {
	var out []string
	for _, v := range m.bytes[n] {
		out = append(out, string(v))
	}
	return out
}

// Bool returns the last value of bool field n and whether it is set.
func (m Message) Bool(n protowire.Number) (value, set bool) {
	if v := m.varints[n]; len(v) > 0 {
		return v[len(v)-1] != 0, true
	}
	return false, false
}

// Int64 returns the last value of int64 field n and whether it is set.
func (m Message) Int64(n protowire.Number) (value int64, set bool) {
	if v := m.varints[n]; len(v) > 0 {
		return int64(v[len(v)-1]), true
	}
	return 0, false
}

// Message parses the last value of message field n; ok is false when it is
// absent.
func (m Message) Message(n protowire.Number) (sub Message, ok bool, err error) {
	v := m.bytes[n]
	if len(v) == 0 {
		return Message{}, false, nil
	}
	sub, err = Parse(v[len(v)-1])
	return sub, true, err
}

// Messages parses every value of repeated message field n.
func (m Message) Messages(n protowire.Number) ([]Message, error) {
	var out []Message
	for _, v := range m.bytes[n] {
		sub, err := Parse(v)
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	return out, nil
}

// StringMap reads map<string, string> field n (entries of key 1, value 2).
func (m Message) StringMap(n protowire.Number) (map[string]string, error) {
	entries, err := m.Messages(n)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		out[e.String(1)] = e.String(2)
	}
	return out, nil
}

// Unwrap checks the magic and reads the runtime.Unknown envelope: the
// TypeMeta (field 1: apiVersion 1, kind 2) and the object (field 2).
func Unwrap(body []byte) (apiVersion, kind string, object Message, err error) {
	rest, ok := bytes.CutPrefix(body, magic)
	if !ok {
		return "", "", Message{}, errors.New("not a Kubernetes protobuf message")
	}
	env, err := Parse(rest)
	if err != nil {
		return "", "", Message{}, err
	}
	tm, _, err := env.Message(1)
	if err != nil {
		return "", "", Message{}, err
	}
	var raw []byte
	if v := env.bytes[2]; len(v) > 0 {
		raw = v[len(v)-1]
	}
	object, err = Parse(raw)
	return tm.String(1), tm.String(2), object, err
}

// ObjectMeta reads an ObjectMeta message into its JSON form: what a client
// may set on a create or an update (name, generateName, namespace, uid,
// resourceVersion, labels, annotations, ownerReferences, finalizers).
func ObjectMeta(m Message) (map[string]any, error) {
	out := map[string]any{}
	for n, key := range map[protowire.Number]string{1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"} {
		if v := m.String(n); v != "" {
			out[key] = v
		}
	}
	for n, key := range map[protowire.Number]string{11: "labels", 12: "annotations"} {
		v, err := m.StringMap(n)
		if err != nil {
			return nil, fmt.Errorf("metadata.%s: %w", key, err)
		}
		if v != nil {
			out[key] = v
		}
	}
	if f := m.Strings(14); len(f) > 0 {
		out["finalizers"] = f
	}
	refs, err := m.Messages(13)
	if err != nil {
		return nil, fmt.Errorf("metadata.ownerReferences: %w", err)
	}
	for _, r := range refs {
		ref := map[string]any{"kind": r.String(1), "name": r.String(3), "uid": r.String(4), "apiVersion": r.String(5)}
		if v, ok := r.Bool(6); ok {
			ref["controller"] = v
		}
		if v, ok := r.Bool(7); ok {
			ref["blockOwnerDeletion"] = v
		}
		list, _ := out["ownerReferences"].([]any)
		out["ownerReferences"] = append(list, ref)
	}
	return out, nil
}

// ToJSON decodes an object of kind wantKind from a protobuf body (its
// envelope, then metadata in field 1) into JSON; fields adds the kind's
// own fields to out, the object's JSON form.
func ToJSON(body []byte, wantKind string, fields func(obj Message, out map[string]any) error) ([]byte, error) {
	apiVersion, kind, obj, err := Unwrap(body)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf: %w", err)
	}
	if kind != wantKind {
		return nil, fmt.Errorf("decoding protobuf: got kind %q, want %q", kind, wantKind)
	}
	m, _, err := obj.Message(1)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s metadata: %w", kind, err)
	}
	objectMeta, err := ObjectMeta(m)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s: %w", kind, err)
	}
	out := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": objectMeta}
	if err := fields(obj, out); err != nil {
		return nil, fmt.Errorf("decoding protobuf %s: %w", kind, err)
	}
	return json.Marshal(out)
}

// zeroTimeSeconds is what client-go writes for an unset meta/v1 Time:
// Go's zero time in Unix seconds.
const zeroTimeSeconds = -62135596800

// Timestamp reads meta/v1 Time or MicroTime field n (seconds 1, nanos 2),
// in UTC; the zero time when the field is absent or carries Go's zero
// time, as client-go encodes a Time it was not given.
func (m Message) Timestamp(n protowire.Number) (time.Time, error) {
	ts, ok, err := m.Message(n)
	if err != nil || !ok {
		return time.Time{}, err
	}
	sec, _ := ts.Int64(1)
	nanos, _ := ts.Int64(2)
	if sec == zeroTimeSeconds && nanos == 0 {
		return time.Time{}, nil
	}
	if nanos < 0 || nanos >= int64(time.Second) {
		return time.Time{}, fmt.Errorf("field %d: nanos %d out of range", n, nanos)
	}
	return time.Unix(sec, nanos).UTC(), nil
}

// PutTime sets out[key] to meta/v1 Time field n in its JSON form
// (RFC 3339, seconds), leaving out an unset one.
func (m Message) PutTime(out map[string]any, key string, n protowire.Number) error {
	return m.putTimestamp(out, key, n, time.RFC3339)
}

// PutMicroTime sets out[key] to meta/v1 MicroTime field n in its JSON
// form (RFC 3339 with microseconds), leaving out an unset one.
func (m Message) PutMicroTime(out map[string]any, key string, n protowire.Number) error {
	return m.putTimestamp(out, key, n, "2006-01-02T15:04:05.000000Z07:00")
}

func (m Message) putTimestamp(out map[string]any, key string, n protowire.Number, layout string) error {
	t, err := m.Timestamp(n)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if !t.IsZero() {
		out[key] = t.Format(layout)
	}
	return nil
}

// PutStrings sets out[key] to each non-empty string field of m that keys
// names, as JSON leaves out empty strings the API marks omitempty.
func (m Message) PutStrings(out map[string]any, keys map[protowire.Number]string) {
	for n, key := range keys {
		if v := m.String(n); v != "" {
			out[key] = v
		}
	}
}

// PutInt32 sets out[key] to int32 field n when it is set.
func (m Message) PutInt32(out map[string]any, key string, n protowire.Number) {
	if v, ok := m.Int64(n); ok {
		out[key] = int32(v)
	}
}
