package configmaps

import "github.com/apikit-dev/apikit/internal/k8sproto"

// ProtobufToJSON decodes a ConfigMap in protobuf (k8s.io/api/core/v1's
// field numbers), as kubectl create configmap posts it.
func ProtobufToJSON(body []byte) ([]byte, error) {
	return k8sproto.ToJSON(body, "ConfigMap", func(obj k8sproto.Message, out map[string]any) error {
		data, err := obj.StringMap(2)
		if err != nil {
			return err
		}
		binary, err := obj.BytesMap(3)
		if err != nil {
			return err
		}
		if data != nil {
			out["data"] = data
		}
		if binary != nil {
			out["binaryData"] = binary
		}
		if v, ok := obj.Bool(4); ok {
			out["immutable"] = v
		}
		return nil
	})
}
