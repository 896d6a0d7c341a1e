package namespaces

import "github.com/apikit-dev/apikit/internal/k8sproto"

var namespaceProtobuf = k8sproto.NewDecoder[Namespace]("Namespace")

// ProtobufToJSON decodes a Namespace in protobuf (k8s.io/api/core/v1's
// field numbers, the protobuf tags on Namespace), as kubectl create
// namespace posts it.
func ProtobufToJSON(body []byte) ([]byte, error) { return namespaceProtobuf.ToJSON(body) }
