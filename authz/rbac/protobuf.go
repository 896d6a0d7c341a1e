package rbac

import (
	"encoding/json"
	"fmt"

	"github.com/apikit-dev/apikit/internal/k8sproto"
	"github.com/apikit-dev/apikit/meta"
)

// ProtobufToJSON decodes an RBAC object in Kubernetes' protobuf encoding,
// as kubectl create role/rolebinding and client-go's typed clients post
// it, and returns it as JSON; field numbers are those of
// k8s.io/api/rbac/v1/generated.proto. wantKind is the kind the resource
// serves.
func ProtobufToJSON(body []byte, wantKind string) ([]byte, error) {
	apiVersion, kind, obj, err := k8sproto.Unwrap(body)
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
	objectMeta, err := k8sproto.ObjectMeta(m)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf %s: %w", kind, err)
	}
	out := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": objectMeta}
	switch kind {
	case KindRole, KindClusterRole:
		rules, err := obj.Messages(2)
		if err != nil {
			return nil, fmt.Errorf("decoding protobuf %s rules: %w", kind, err)
		}
		list := []PolicyRule{}
		for _, r := range rules {
			list = append(list, PolicyRule{Verbs: r.Strings(1), APIGroups: r.Strings(2), Resources: r.Strings(3),
				ResourceNames: r.Strings(4), NonResourceURLs: r.Strings(5)})
		}
		out["rules"] = list
		if kind == KindClusterRole {
			agg, ok, err := obj.Message(3)
			if err != nil {
				return nil, fmt.Errorf("decoding protobuf %s aggregationRule: %w", kind, err)
			}
			if ok {
				selectors, err := agg.Messages(1)
				if err != nil {
					return nil, fmt.Errorf("decoding protobuf %s aggregationRule: %w", kind, err)
				}
				var list []any
				for _, s := range selectors {
					sel, err := k8sproto.LabelSelector(s)
					if err != nil {
						return nil, fmt.Errorf("decoding protobuf %s aggregationRule: %w", kind, err)
					}
					list = append(list, sel)
				}
				out["aggregationRule"] = map[string]any{"clusterRoleSelectors": list}
			}
		}
	case KindRoleBinding, KindClusterRoleBinding:
		subjects, err := obj.Messages(2)
		if err != nil {
			return nil, fmt.Errorf("decoding protobuf %s subjects: %w", kind, err)
		}
		var list []Subject
		for _, s := range subjects {
			list = append(list, Subject{Kind: s.String(1), APIGroup: s.String(2), Name: s.String(3), Namespace: s.String(4)})
		}
		out["subjects"] = list
		ref, _, err := obj.Message(3)
		if err != nil {
			return nil, fmt.Errorf("decoding protobuf %s roleRef: %w", kind, err)
		}
		out["roleRef"] = RoleRef{APIGroup: ref.String(1), Kind: ref.String(2), Name: ref.String(3)}
	default:
		return nil, fmt.Errorf("decoding protobuf: kind %q is not an RBAC kind", kind)
	}
	return json.Marshal(out)
}

// ProtobufToJSON implements registry.ProtobufDecoder: kubectl's typed
// clients write RBAC objects in protobuf.
func (g *guarded) ProtobufToJSON(body []byte) ([]byte, error) {
	b, err := ProtobufToJSON(body, g.Info().Kind)
	if err != nil {
		return nil, meta.NewBadRequest(err.Error())
	}
	return b, nil
}
