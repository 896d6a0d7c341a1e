package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unique"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// Keys under which derived forms of a stored value live in its storage.Memo.
// The storage's cache shares one memo per value between every store over
// that storage (core/v1 and events.k8s.io/v1 events are two stores over
// one), so each key names the group-version (apiVersion) it derives,
// never the version alone, and the decoded object also its Go type.
//
// A memo holds a key as an interface, and a lookup compares it with every
// key stored before it: the keys go in as unique.Handles of these structs,
// which an interface holds in its data word, so that the comparison is of
// two words, not a call that reads each stored key's strings from a
// separate allocation of its own (one more cache miss per item of a LIST,
// and 32 bytes per memo entry the watch cache keeps).
type (
	decodedMemoKey struct {
		apiVersion string
		ti         *typeInfo
	}
	servedMemoKey struct{ apiVersion, epoch string }
	jsonMemoKey   struct{ apiVersion, epoch string }
)

// decodeStored decodes a stored value and stamps its resourceVersion. With a
// memo the decoded object is shared and must be treated as read-only.
func (s *Store[T]) decodeStored(kv storage.KeyValue) (T, error) {
	key := s.decodedKey()
	if v, ok := kv.Memo.Load(key); ok {
		return v.(T), nil
	}
	obj, err := s.decodeFresh(kv.Value, kv.Revision)
	if err != nil {
		return obj, err
	}
	return kv.Memo.LoadOrStore(key, obj).(T), nil
}

// decodedKey is the memo key of the store's decoded objects.
func (s *Store[T]) decodedKey() unique.Handle[decodedMemoKey] { return s.decodedMemoKey }

// decodeFresh decodes a private copy that the caller may modify.
func (s *Store[T]) decodeFresh(value []byte, rev int64) (T, error) {
	obj := s.ti.newObject().(T)
	if err := json.Unmarshal(value, obj); err != nil {
		var zero T
		return zero, meta.NewInternalError(fmt.Errorf("decoding stored %s: %w", s.opts.Resource, err))
	}
	m := obj.GetObjectMeta()
	if rev > 0 {
		m.ResourceVersion = strconv.FormatInt(rev, 10)
	}
	tm := obj.GetTypeMeta()
	tm.APIVersion, tm.Kind = s.storageAPIVersion, s.opts.Kind
	return obj, nil
}

// encodeForStorage writes obj in the storage version without the fields that
// the storage layer owns (resourceVersion) or that are never persisted.
func (s *Store[T]) encodeForStorage(obj T) ([]byte, error) {
	tm := obj.GetTypeMeta()
	m := obj.GetObjectMeta()
	savedRV, savedTM, savedSelf := m.ResourceVersion, *tm, m.SelfLink
	m.ResourceVersion, m.SelfLink = "", ""
	tm.APIVersion, tm.Kind = s.storageAPIVersion, s.opts.Kind
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(obj)
	m.ResourceVersion, m.SelfLink = savedRV, savedSelf
	*tm = savedTM
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("encoding %s: %w", s.opts.Resource, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// storedPrefix is how encodeForStorage starts every value of T whose
// metadata follows its TypeMeta: `{"kind":..,"apiVersion":..,"metadata":{`.
func storedPrefix(kind, apiVersion string) []byte {
	k, _ := EncodeJSON(kind) // strings always encode
	av, _ := EncodeJSON(apiVersion)
	b := append([]byte(`{"kind":`), k...)
	b = append(b, `,"apiVersion":`...)
	b = append(b, av...)
	return append(b, `,"metadata":{`...)
}

// beforeResourceVersion are the metadata fields that ObjectMeta encodes
// before resourceVersion, all strings; afterResourceVersion are those it
// encodes after it, in its field order (each may be absent: all are
// omitted when empty or zero).
var (
	beforeResourceVersion = map[string]int{"name": 1, "generateName": 2, "namespace": 3, "selfLink": 4, "uid": 5} // their order
	afterResourceVersion  = map[string]bool{"generation": true, "creationTimestamp": true, "deletionTimestamp": true,
		"deletionGracePeriodSeconds": true, "labels": true, "annotations": true, "ownerReferences": true,
		"finalizers": true, "managedFields": true}
)

// storedJSON returns a stored value's JSON as a response carries it in the
// storage version, without decoding it: the stored bytes with
// "resourceVersion":"<rev>" put where encoding the decoded object would put
// it (after uid), so the bytes are those of decode and encode, in parts that
// share the stored bytes (splice). ok is false, for the caller to decode and
// encode instead, unless the value starts as encodeForStorage writes it: the
// exact prefix, the string fields before resourceVersion, then a field
// ObjectMeta encodes after it or the end of the metadata; and is valid JSON.
//
// Unlike decode and encode, it passes through what a decode would drop or
// normalize after that: fields T no longer has (stored by an older version
// of the type), or whatever a writer other than this store put there.
// docs/design.md has the reasoning.
func (s *Store[T]) storedJSON(value []byte, rev int64) (JSONParts, bool) {
	p, ok := s.splice(value, rev)
	if !ok || !json.Valid(value) {
		return JSONParts{}, false
	}
	return p, true
}

// splice is storedJSON in parts that share the stored bytes, and without
// the check that the value is valid JSON: for a caller that compares the
// parts with an encoding, which is. A memo keeping them keeps only the
// resourceVersion's few bytes beside the stored value, not a copy of it.
func (s *Store[T]) splice(value []byte, rev int64) (JSONParts, bool) {
	at, last, ok := s.resourceVersionAt(value, rev)
	if !ok {
		return JSONParts{}, false
	}
	rv := s.appendResourceVersion(make([]byte, 0, len(`,"resourceVersion":"",`)+20), at, last, rev)
	// Full slice expressions: appending to a part must never write into
	// the stored bytes.
	return JSONParts{value[:at:at], rv, value[at:len(value):len(value)]}, true
}

// resourceVersionAt finds where storedJSON puts the resourceVersion in
// value: before a key, or before the "}" that ends the metadata (last).
func (s *Store[T]) resourceVersionAt(value []byte, rev int64) (at int, last, ok bool) {
	if rev <= 0 || !bytes.HasPrefix(value, s.storedPrefix) {
		return 0, false, false
	}
	at = len(s.storedPrefix)
	order := 0
	for {
		if at < len(value) && value[at] == '}' {
			return at, true, true
		}
		key, j := jsonString(value, at)
		if j < 0 {
			return 0, false, false
		}
		if afterResourceVersion[string(key)] {
			return at, false, true
		}
		n := beforeResourceVersion[string(key)]
		if n <= order || j >= len(value) || value[j] != ':' {
			return 0, false, false // unknown, or out of ObjectMeta's order
		}
		order = n
		if _, j = jsonString(value, j+1); j < 0 || j >= len(value) || (value[j] != ',' && value[j] != '}') {
			return 0, false, false
		}
		if value[j] == '}' {
			return j, true, true
		}
		at = j + 1
	}
}

// appendResourceVersion appends the resourceVersion field that goes at at,
// with a comma before it when it ends the metadata after another field,
// after it when a field follows.
func (s *Store[T]) appendResourceVersion(dst []byte, at int, last bool, rev int64) []byte {
	if last && at > len(s.storedPrefix) {
		dst = append(dst, ',')
	}
	dst = append(dst, `"resourceVersion":"`...)
	dst = strconv.AppendInt(dst, rev, 10)
	dst = append(dst, '"')
	if !last {
		dst = append(dst, ',')
	}
	return dst
}

// JSONParts is a JSON encoding in pieces, whose concatenation in order is
// the encoding; unused pieces are empty. A read value's JSON is the stored
// bytes around its resourceVersion (see Item.JSONParts): a response that
// copies the encoding anyway writes the parts, and nothing assembles them.
// The parts are shared and read-only.
type JSONParts [3][]byte

// Len returns the encoding's length.
func (p JSONParts) Len() int { return len(p[0]) + len(p[1]) + len(p[2]) }

// Bytes returns the encoding in one piece: the first part when it is the
// only one (shared, read-only), else a new slice.
func (p JSONParts) Bytes() []byte {
	if len(p[1]) == 0 && len(p[2]) == 0 {
		return p[0]
	}
	return append(append(append(make([]byte, 0, p.Len()), p[0]...), p[1]...), p[2]...)
}

// equal reports whether the parts make b.
func (p JSONParts) equal(b []byte) bool {
	for _, q := range p {
		if !bytes.HasPrefix(b, q) {
			return false
		}
		b = b[len(q):]
	}
	return len(b) == 0
}

// jsonString reads the JSON string starting at b[i] and returns its
// contents, still escaped, and the index just past its closing quote; -1
// when b[i:] does not start with a string.
func jsonString(b []byte, i int) ([]byte, int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++ // skip the escaped character
		case '"':
			return b[i+1 : j], j + 1
		}
	}
	return nil, -1
}

// EncodeJSON writes v as compact JSON without HTML escaping, as Kubernetes
// does (so "<" stays "<" in annotations).
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
