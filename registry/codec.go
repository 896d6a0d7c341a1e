package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// Keys under which derived forms of a stored value live in its storage.Memo.
type (
	decodedMemoKey struct{}
	servedMemoKey  struct{ version string }
	jsonMemoKey    struct{ version string }
)

// decodeStored decodes a stored value and stamps its resourceVersion. With a
// memo the decoded object is shared and must be treated as read-only.
func (s *Store[T]) decodeStored(kv storage.KeyValue) (T, error) {
	if v, ok := kv.Memo.Load(decodedMemoKey{}); ok {
		return v.(T), nil
	}
	obj, err := s.decodeFresh(kv.Value, kv.Revision)
	if err != nil {
		return obj, err
	}
	return kv.Memo.LoadOrStore(decodedMemoKey{}, obj).(T), nil
}

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
