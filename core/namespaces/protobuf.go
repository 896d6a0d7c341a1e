package namespaces

import "github.com/apikit-dev/apikit/internal/k8sproto"

// ProtobufToJSON decodes a Namespace in protobuf (k8s.io/api/core/v1's
// field numbers), as kubectl create namespace posts it.
func ProtobufToJSON(body []byte) ([]byte, error) {
	return k8sproto.ToJSON(body, "Namespace", func(obj k8sproto.Message, out map[string]any) error {
		spec, ok, err := obj.Message(2)
		if err != nil {
			return err
		}
		if ok {
			out["spec"] = map[string]any{"finalizers": spec.Strings(1)}
		}
		return nil
	})
}
