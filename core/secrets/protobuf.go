package secrets

import "github.com/apikit-dev/apikit/internal/k8sproto"

// ProtobufToJSON decodes a Secret in protobuf (k8s.io/api/core/v1's field
// numbers), as kubectl create secret posts it.
func ProtobufToJSON(body []byte) ([]byte, error) {
	return k8sproto.ToJSON(body, "Secret", func(obj k8sproto.Message, out map[string]any) error {
		data, err := obj.BytesMap(2)
		if err != nil {
			return err
		}
		stringData, err := obj.StringMap(4)
		if err != nil {
			return err
		}
		if data != nil {
			out["data"] = data
		}
		if stringData != nil {
			out["stringData"] = stringData
		}
		if t := obj.String(3); t != "" {
			out["type"] = t
		}
		if v, ok := obj.Bool(5); ok {
			out["immutable"] = v
		}
		return nil
	})
}
