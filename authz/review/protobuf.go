package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// kubectl (client-go's typed clients) posts the reviews of this built-in
// group in Kubernetes' protobuf encoding. These functions read that
// encoding for the four review kinds, field numbers as in
// k8s.io/api/authorization/v1/generated.proto, and give the JSON the
// server decodes as usual. Only the spec is read: metadata and status are
// the server's to fill.

// protobufMagic starts every Kubernetes protobuf body, before the
// runtime.Unknown envelope.
var protobufMagic = []byte("k8s\x00")

// message is the fields of one protobuf message: the raw bytes of each
// length-delimited field, the varints ignored (no review field is one).
type message map[protowire.Number][][]byte

func parse(b []byte) (message, error) {
	m := message{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			m[num] = append(m[num], v)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return m, nil
}

// str returns the last value of a string field.
func (m message) str(n protowire.Number) string {
	if v := m[n]; len(v) > 0 {
		return string(v[len(v)-1])
	}
	return ""
}

// sub parses the last value of a message field; nil when absent.
func (m message) sub(n protowire.Number) (message, error) {
	v := m[n]
	if len(v) == 0 {
		return nil, nil
	}
	return parse(v[len(v)-1])
}

// unwrap checks the magic and reads the runtime.Unknown envelope: its
// TypeMeta (1: apiVersion 1, kind 2) and raw object (2).
func unwrap(body []byte) (apiVersion, kind string, raw []byte, err error) {
	rest, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return "", "", nil, errors.New("not a Kubernetes protobuf message")
	}
	env, err := parse(rest)
	if err != nil {
		return "", "", nil, err
	}
	tm, err := env.sub(1)
	if err != nil {
		return "", "", nil, err
	}
	if v := env[2]; len(v) > 0 {
		raw = v[len(v)-1]
	}
	return tm.str(1), tm.str(2), raw, nil
}

func resourceAttributes(m message) *ResourceAttributes {
	if m == nil {
		return nil
	}
	return &ResourceAttributes{Namespace: m.str(1), Verb: m.str(2), Group: m.str(3), Version: m.str(4),
		Resource: m.str(5), Subresource: m.str(6), Name: m.str(7)}
}

func nonResourceAttributes(m message) *NonResourceAttributes {
	if m == nil {
		return nil
	}
	return &NonResourceAttributes{Path: m.str(1), Verb: m.str(2)}
}

// attributes reads fields 1 (resourceAttributes) and 2
// (nonResourceAttributes), which every review spec shares.
func attributes(spec message) (*ResourceAttributes, *NonResourceAttributes, error) {
	ra, err := spec.sub(1)
	if err != nil {
		return nil, nil, err
	}
	na, err := spec.sub(2)
	if err != nil {
		return nil, nil, err
	}
	return resourceAttributes(ra), nonResourceAttributes(na), nil
}

// subjectAccessReviewSpec reads a SubjectAccessReviewSpec: the attributes,
// user (3), groups (4), extra (5: map entries of key 1 and ExtraValue 2,
// whose items are field 1) and uid (6).
func subjectAccessReviewSpec(spec message) (SubjectAccessReviewSpec, error) {
	var s SubjectAccessReviewSpec
	var err error
	if s.ResourceAttributes, s.NonResourceAttributes, err = attributes(spec); err != nil {
		return s, err
	}
	s.User, s.UID = spec.str(3), spec.str(6)
	for _, g := range spec[4] {
		s.Groups = append(s.Groups, string(g))
	}
	for _, e := range spec[5] {
		entry, err := parse(e)
		if err != nil {
			return s, err
		}
		value, err := entry.sub(2)
		if err != nil {
			return s, err
		}
		if s.Extra == nil {
			s.Extra = map[string]ExtraValue{}
		}
		var items ExtraValue
		for _, it := range value[1] {
			items = append(items, string(it))
		}
		s.Extra[entry.str(1)] = items
	}
	return s, nil
}

// ProtobufToJSON decodes a review posted in protobuf and returns it as
// JSON: kind, apiVersion, metadata.namespace (field 1 of ObjectMeta's
// field 3) and spec. wantKind is the kind the resource serves.
func ProtobufToJSON(body []byte, wantKind string) ([]byte, error) {
	apiVersion, kind, raw, err := unwrap(body)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf: %w", err)
	}
	if kind != wantKind {
		return nil, fmt.Errorf("decoding protobuf: got kind %q, want %q", kind, wantKind)
	}
	obj, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s: %w", kind, err)
	}
	objectMeta, err := obj.sub(1)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s metadata: %w", kind, err)
	}
	spec, err := obj.sub(2)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s spec: %w", kind, err)
	}
	if spec == nil {
		spec = message{}
	}
	out := map[string]any{"apiVersion": apiVersion, "kind": kind}
	if ns := objectMeta.str(3); ns != "" {
		out["metadata"] = map[string]any{"namespace": ns}
	}
	switch kind {
	case "SelfSubjectRulesReview":
		out["spec"] = SelfSubjectRulesReviewSpec{Namespace: spec.str(1)}
	case "SelfSubjectAccessReview":
		var s SelfSubjectAccessReviewSpec
		if s.ResourceAttributes, s.NonResourceAttributes, err = attributes(spec); err != nil {
			return nil, fmt.Errorf("decoding protobuf %s spec: %w", kind, err)
		}
		out["spec"] = s
	case "SubjectAccessReview", "LocalSubjectAccessReview":
		s, err := subjectAccessReviewSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("decoding protobuf %s spec: %w", kind, err)
		}
		out["spec"] = s
	default:
		return nil, fmt.Errorf("decoding protobuf: kind %q is not a review", kind)
	}
	return json.Marshal(out)
}
