package rbac

import (
	"fmt"

	"github.com/apikit-dev/apikit/internal/k8sproto"
	"github.com/apikit-dev/apikit/meta"
)

// protobufDecoders read the RBAC kinds in protobuf by the protobuf tags on
// their types (k8s.io/api/rbac/v1/generated.proto's field numbers).
var protobufDecoders = map[string]*k8sproto.Decoder{
	KindRole:               k8sproto.NewDecoder[Role](KindRole),
	KindClusterRole:        k8sproto.NewDecoder[ClusterRole](KindClusterRole),
	KindRoleBinding:        k8sproto.NewDecoder[RoleBinding](KindRoleBinding),
	KindClusterRoleBinding: k8sproto.NewDecoder[ClusterRoleBinding](KindClusterRoleBinding),
}

// ProtobufToJSON decodes an RBAC object in Kubernetes' protobuf encoding,
// as kubectl create role/rolebinding and client-go's typed clients post
// it, and returns it as JSON. wantKind is the kind the resource serves.
func ProtobufToJSON(body []byte, wantKind string) ([]byte, error) {
	d, ok := protobufDecoders[wantKind]
	if !ok {
		return nil, fmt.Errorf("decoding protobuf: kind %q is not an RBAC kind", wantKind)
	}
	return d.ToJSON(body)
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
