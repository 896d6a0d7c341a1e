package secrets

import "github.com/apikit-dev/apikit/internal/k8sproto"

var secretProtobuf = k8sproto.NewDecoder[Secret]("Secret")

// ProtobufToJSON decodes a Secret in protobuf (k8s.io/api/core/v1's field
// numbers, the protobuf tags on Secret), as kubectl create secret posts it.
func ProtobufToJSON(body []byte) ([]byte, error) { return secretProtobuf.ToJSON(body) }
