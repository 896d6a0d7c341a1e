package serviceaccounts

import "github.com/apikit-dev/apikit/internal/k8sproto"

var serviceAccountProtobuf = k8sproto.NewDecoder[ServiceAccount]("ServiceAccount")

// ProtobufToJSON decodes a ServiceAccount in protobuf (k8s.io/api/core/v1's
// field numbers, the protobuf tags on ServiceAccount), as kubectl create
// serviceaccount posts it.
func ProtobufToJSON(body []byte) ([]byte, error) { return serviceAccountProtobuf.ToJSON(body) }
