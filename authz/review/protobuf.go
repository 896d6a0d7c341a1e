package review

import (
	"encoding/json"
	"fmt"

	"github.com/apikit-dev/apikit/internal/k8sproto"
)

// kubectl (client-go's typed clients) posts the reviews of this built-in
// group in Kubernetes' protobuf encoding; ProtobufToJSON reads it, field
// numbers as in k8s.io/api/authorization/v1/generated.proto. Only
// metadata's namespace and the spec are read: the rest is the server's to
// fill.

func resourceAttributes(m k8sproto.Message, ok bool) *ResourceAttributes {
	if !ok {
		return nil
	}
	return &ResourceAttributes{Namespace: m.String(1), Verb: m.String(2), Group: m.String(3), Version: m.String(4),
		Resource: m.String(5), Subresource: m.String(6), Name: m.String(7)}
}

func nonResourceAttributes(m k8sproto.Message, ok bool) *NonResourceAttributes {
	if !ok {
		return nil
	}
	return &NonResourceAttributes{Path: m.String(1), Verb: m.String(2)}
}

// attributes reads fields 1 (resourceAttributes) and 2
// (nonResourceAttributes), which every review spec shares.
func attributes(spec k8sproto.Message) (*ResourceAttributes, *NonResourceAttributes, error) {
	ra, okR, err := spec.Message(1)
	if err != nil {
		return nil, nil, err
	}
	na, okN, err := spec.Message(2)
	if err != nil {
		return nil, nil, err
	}
	return resourceAttributes(ra, okR), nonResourceAttributes(na, okN), nil
}

// subjectAccessReviewSpec reads a SubjectAccessReviewSpec: the attributes,
// user (3), groups (4), extra (5: entries of key 1 and ExtraValue 2, whose
// items are field 1) and uid (6).
func subjectAccessReviewSpec(spec k8sproto.Message) (SubjectAccessReviewSpec, error) {
	var s SubjectAccessReviewSpec
	var err error
	if s.ResourceAttributes, s.NonResourceAttributes, err = attributes(spec); err != nil {
		return s, err
	}
	s.User, s.UID, s.Groups = spec.String(3), spec.String(6), spec.Strings(4)
	entries, err := spec.Messages(5)
	if err != nil {
		return s, err
	}
	for _, e := range entries {
		value, _, err := e.Message(2)
		if err != nil {
			return s, err
		}
		if s.Extra == nil {
			s.Extra = map[string]ExtraValue{}
		}
		s.Extra[e.String(1)] = value.Strings(1)
	}
	return s, nil
}

// ProtobufToJSON decodes a review posted in protobuf and returns it as
// JSON: kind, apiVersion, metadata.namespace and spec. wantKind is the kind
// the resource serves.
func ProtobufToJSON(body []byte, wantKind string) ([]byte, error) {
	apiVersion, kind, obj, err := k8sproto.Unwrap(body)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf: %w", err)
	}
	if kind != wantKind {
		return nil, fmt.Errorf("decoding protobuf: got kind %q, want %q", kind, wantKind)
	}
	objectMeta, _, err := obj.Message(1)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s metadata: %w", kind, err)
	}
	spec, _, err := obj.Message(2)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s spec: %w", kind, err)
	}
	out := map[string]any{"apiVersion": apiVersion, "kind": kind}
	if ns := objectMeta.String(3); ns != "" {
		out["metadata"] = map[string]any{"namespace": ns}
	}
	switch kind {
	case "SelfSubjectRulesReview":
		out["spec"] = SelfSubjectRulesReviewSpec{Namespace: spec.String(1)}
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
