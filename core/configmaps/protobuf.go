package configmaps

import "github.com/apikit-dev/apikit/internal/k8sproto"

var configMapProtobuf = k8sproto.NewDecoder[ConfigMap]("ConfigMap")

// ProtobufToJSON decodes a ConfigMap in protobuf (k8s.io/api/core/v1's
// field numbers, the protobuf tags on ConfigMap), as kubectl create
// configmap posts it.
func ProtobufToJSON(body []byte) ([]byte, error) { return configMapProtobuf.ToJSON(body) }
