package extensions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// Object is a custom resource: its type and object metadata, and every
// other top-level field as a JSON value (map[string]any, []any, string,
// bool, nil, int64 or float64, as structural.DecodeJSON gives them). One
// Go type serves every CRD, through registry.Store like any built-in:
// the store reads Content as the spec (a change bumps generation) and
// Status as the status subresource.
type Object struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	// Content holds the top-level fields but apiVersion, kind, metadata
	// and status; nil when there are none.
	Content map[string]any `json:"content,omitempty"`
	// Status is the value of the status field, nil when there is none.
	Status any `json:"status,omitempty"`

	// schema, set on the objects a request's body is decoded into, is
	// the served version's: decoding prunes and defaults by it, as
	// kube-apiserver's decoder does, so that what server-side apply
	// records and admission sees are the object that will be stored.
	schema *schema.Schema
	// pruned are the paths decoding dropped (UnknownFields).
	pruned []string
	// decodedAPIVersion is the apiVersion the decoded JSON named: for an
	// object read from storage, the version it was stored in, which the
	// registry's decoding replaces in TypeMeta by the storage version. A
	// conversion webhook converts objects from the version they were
	// stored in (status.storedVersions names every such version).
	decodedAPIVersion string
}

// storedVersion returns the version of group an object read from storage
// was stored in: the one its JSON named, the storage version when it
// named none of the group.
func (o *Object) storedVersion(group, storageVersion string) string {
	gv, err := meta.ParseGroupVersion(o.decodedAPIVersion)
	if err != nil || gv.Group != group || gv.Version == "" {
		return storageVersion
	}
	return gv.Version
}

// UnknownFields returns the paths of the fields the last decode pruned,
// for the request's field validation (endpoints.UnknownFielder).
func (o *Object) UnknownFields() []string { return o.pruned }

// MarshalJSON writes kind, apiVersion and metadata first, as the registry
// writes every object (its stored JSON is then served without decoding),
// then the other fields sorted by name.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	field := func(name string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		if err := enc.Encode(name); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		b.Truncate(b.Len() - 1)
		return nil
	}
	if o.Kind != "" {
		if err := field("kind", o.Kind); err != nil {
			return nil, err
		}
	}
	if o.APIVersion != "" {
		if err := field("apiVersion", o.APIVersion); err != nil {
			return nil, err
		}
	}
	if err := field("metadata", &o.ObjectMeta); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(o.Content)+1)
	for k := range o.Content {
		keys = append(keys, k)
	}
	if o.Status != nil {
		keys = append(keys, "status")
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := o.Status
		if k != "status" {
			v = o.Content[k]
		}
		if err := field(k, v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a custom resource: apiVersion and kind must be
// strings and metadata an object, as kube-apiserver requires.
//
// The top level is split into raw values first, so that metadata (most of
// a stored object's bytes: managedFields) is decoded once, into its Go
// type, and the other fields into JSON values; every read from storage and
// every write decodes objects.
func (o *Object) UnmarshalJSON(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		if _, ok := err.(*json.UnmarshalTypeError); ok {
			return errNotObject
		}
		return fmt.Errorf("decoding JSON: %w", err)
	}
	if top == nil {
		return errNotObject // null
	}
	*o = Object{schema: o.schema}
	for k, raw := range top {
		null := string(raw) == "null"
		switch k {
		case "apiVersion", "kind":
			var s string
			if !null && json.Unmarshal(raw, &s) != nil {
				return fmt.Errorf("%s must be a string", k)
			}
			if k == "kind" {
				o.Kind = s
			} else {
				o.APIVersion, o.decodedAPIVersion = s, s
			}
		case "metadata":
			if null {
				continue
			}
			if raw[0] != '{' {
				return errors.New("metadata must be an object")
			}
			// Metadata has a Go type: fields it lacks are dropped, as
			// kube-apiserver prunes unknown metadata fields.
			if err := json.Unmarshal(raw, &o.ObjectMeta); err != nil {
				return fmt.Errorf("metadata: %w", err)
			}
		default:
			v, err := structural.DecodeJSON(raw)
			if err != nil {
				return err
			}
			if k == "status" {
				o.Status = v
				continue
			}
			if o.Content == nil {
				o.Content = map[string]any{}
			}
			o.Content[k] = v
		}
	}
	if o.schema != nil {
		m := o.Fields()
		o.pruned = structural.Prune(o.schema, m, true)
		structural.Default(o.schema, m)
		o.SetFields(m)
	}
	return nil
}

// errNotObject is the error of a custom resource that is not a JSON
// object.
var errNotObject = errors.New("a custom resource must be a JSON object")

// Fields returns the object as one JSON value (without metadata, which
// has its Go type): the form schemas validate, default and prune.
func (o *Object) Fields() map[string]any {
	m := make(map[string]any, len(o.Content)+3)
	for k, v := range o.Content {
		m[k] = v
	}
	if o.Status != nil {
		m["status"] = o.Status
	}
	return m
}

// SetFields sets Content and Status from m (what Fields returned, changed).
func (o *Object) SetFields(m map[string]any) {
	o.Content, o.Status = nil, nil
	for k, v := range m {
		switch k {
		case "apiVersion", "kind", "metadata":
		case "status":
			o.Status = v
		default:
			if o.Content == nil {
				o.Content = map[string]any{}
			}
			o.Content[k] = v
		}
	}
}

// deepCopyJSON copies a JSON value of the schema convention.
func deepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopyJSON(e)
		}
		return out
	}
	return v
}

// deepCopy returns a copy of o that shares nothing with it but metadata's
// slices and maps, which writes replace rather than change.
func (o *Object) deepCopy() *Object {
	c := *o
	if o.Content != nil {
		c.Content = deepCopyJSON(o.Content).(map[string]any)
	}
	c.Status = deepCopyJSON(o.Status)
	return &c
}
