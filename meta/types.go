package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// TypeMeta names the kind and API version of a serialized object.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// GetTypeMeta returns the TypeMeta itself, so that any struct embedding
// TypeMeta exposes it through the Object interface.
func (t *TypeMeta) GetTypeMeta() *TypeMeta { return t }

// GroupVersionKind parses APIVersion and pairs it with Kind.
func (t *TypeMeta) GroupVersionKind() GroupVersionKind {
	gv, _ := ParseGroupVersion(t.APIVersion)
	return gv.WithKind(t.Kind)
}

// ObjectMeta is the metadata every persisted resource carries.
//
// Field order and tags follow k8s.io/apimachinery's ObjectMeta, including the
// quirk that a zero creationTimestamp is written as null rather than omitted,
// and its lists' merge semantics (package schema reads the tags).
type ObjectMeta struct {
	Name                       string            `json:"name,omitempty" protobuf:"1"`
	GenerateName               string            `json:"generateName,omitempty" protobuf:"2"`
	Namespace                  string            `json:"namespace,omitempty" protobuf:"3"`
	SelfLink                   string            `json:"selfLink,omitempty" protobuf:"4"`
	UID                        string            `json:"uid,omitempty" protobuf:"5"`
	ResourceVersion            string            `json:"resourceVersion,omitempty" protobuf:"6"`
	Generation                 int64             `json:"generation,omitempty" protobuf:"7"`
	CreationTimestamp          Time              `json:"creationTimestamp,omitzero" protobuf:"8"`
	DeletionTimestamp          *Time             `json:"deletionTimestamp,omitempty" protobuf:"9"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty" protobuf:"10"`
	Labels                     map[string]string `json:"labels,omitempty" protobuf:"11"`
	Annotations                map[string]string `json:"annotations,omitempty" protobuf:"12"`
	OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty" patchStrategy:"merge" patchMergeKey:"uid" listType:"map" listMapKeys:"uid" protobuf:"13"`
	Finalizers                 []string          `json:"finalizers,omitempty" patchStrategy:"merge" listType:"set" protobuf:"14"`
	ManagedFields              []ManagedFields   `json:"managedFields,omitempty" listType:"atomic" protobuf:"17"`
}

// GetObjectMeta returns the ObjectMeta itself, so that any struct embedding
// ObjectMeta exposes it through the Object interface.
func (m *ObjectMeta) GetObjectMeta() *ObjectMeta { return m }

// OwnerReference identifies an object that owns the referring one.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion" protobuf:"5"`
	Kind               string `json:"kind" protobuf:"1"`
	Name               string `json:"name" protobuf:"3"`
	UID                string `json:"uid" protobuf:"4"`
	Controller         *bool  `json:"controller,omitempty" protobuf:"6"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty" protobuf:"7"`
}

// ManagedFields records which manager set which fields. apikit stores and
// returns it as given; it does not implement server-side apply field tracking.
type ManagedFields struct {
	Manager     string          `json:"manager,omitempty" protobuf:"1"`
	Operation   string          `json:"operation,omitempty" protobuf:"2"`
	APIVersion  string          `json:"apiVersion,omitempty" protobuf:"3"`
	Time        *Time           `json:"time,omitempty" protobuf:"4"`
	FieldsType  string          `json:"fieldsType,omitempty" protobuf:"6"`
	FieldsV1    json.RawMessage `json:"fieldsV1,omitempty" protobuf:"7"`
	Subresource string          `json:"subresource,omitempty" protobuf:"8"`
}

// ListMeta is the metadata of a list response.
type ListMeta struct {
	SelfLink           string `json:"selfLink,omitempty"`
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// Object is implemented by a pointer to any struct that embeds TypeMeta and
// ObjectMeta. It is how apikit handles API types without generated code.
type Object interface {
	GetTypeMeta() *TypeMeta
	GetObjectMeta() *ObjectMeta
}

// Time is a timestamp with the JSON form Kubernetes uses: RFC 3339 in UTC with
// second precision, and null for the zero time.
type Time struct {
	time.Time
}

// Now returns the current time truncated to the second, as it will round-trip
// through JSON.
func Now() Time { return Time{time.Now().UTC().Truncate(time.Second)} }

// OpenAPISchemaType says that Time is a string in JSON (package schema and
// Kubernetes' OpenAPI read it).
func (Time) OpenAPISchemaType() []string { return []string{"string"} }

// OpenAPISchemaFormat is the format of Time's string.
func (Time) OpenAPISchemaFormat() string { return "date-time" }

// NewTime wraps t.
func NewTime(t time.Time) Time { return Time{t} }

// IsZero reports whether t is unset; it is safe on a nil receiver.
func (t *Time) IsZero() bool { return t == nil || t.Time.IsZero() }

// MarshalJSON implements json.Marshaler: RFC 3339 in UTC, null when zero.
func (t Time) MarshalJSON() ([]byte, error) { return marshalTime(t.Time, time.RFC3339), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (t *Time) UnmarshalJSON(b []byte) (err error) {
	t.Time, err = unmarshalTime(b, time.RFC3339)
	return err
}

// marshalTime writes t as a JSON string in layout, in UTC; null when zero.
func marshalTime(t time.Time, layout string) []byte {
	if t.IsZero() {
		return []byte("null")
	}
	b := make([]byte, 0, len(layout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, layout)
	return append(b, '"')
}

// unmarshalTime reads a JSON string in layout (null or "" is the zero
// time), in local time as Kubernetes reads it.
func unmarshalTime(b []byte, layout string) (time.Time, error) {
	if bytes.Equal(b, []byte("null")) {
		return time.Time{}, nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return time.Time{}, fmt.Errorf("time must be an RFC 3339 string: %w", err)
	}
	if s == "" {
		return time.Time{}, nil
	}
	p, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, err
	}
	return p.Local(), nil
}

// MicroTime is a timestamp with microsecond precision, as used by
// meta.k8s.io MicroTime fields.
type MicroTime struct {
	time.Time
}

// OpenAPISchemaType says that MicroTime is a string in JSON.
func (MicroTime) OpenAPISchemaType() []string { return []string{"string"} }

// OpenAPISchemaFormat is the format of MicroTime's string.
func (MicroTime) OpenAPISchemaFormat() string { return "date-time" }

const rfc3339Micro = "2006-01-02T15:04:05.000000Z07:00"

// MarshalJSON implements json.Marshaler: RFC 3339 with microseconds, in
// UTC; null when zero.
func (t MicroTime) MarshalJSON() ([]byte, error) { return marshalTime(t.Time, rfc3339Micro), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (t *MicroTime) UnmarshalJSON(b []byte) (err error) {
	t.Time, err = unmarshalTime(b, time.RFC3339Nano)
	return err
}
