package serviceaccounts

import "github.com/apikit-dev/apikit/internal/k8sproto"

// ProtobufToJSON decodes a ServiceAccount in protobuf (k8s.io/api/core/v1's
// field numbers), as kubectl create serviceaccount posts it.
func ProtobufToJSON(body []byte) ([]byte, error) {
	return k8sproto.ToJSON(body, "ServiceAccount", func(obj k8sproto.Message, out map[string]any) error {
		refs, err := obj.Messages(2)
		if err != nil {
			return err
		}
		for _, r := range refs {
			list, _ := out["secrets"].([]ObjectReference)
			out["secrets"] = append(list, ObjectReference{Kind: r.String(1), Namespace: r.String(2), Name: r.String(3),
				UID: r.String(4), APIVersion: r.String(5), ResourceVersion: r.String(6), FieldPath: r.String(7)})
		}
		pulls, err := obj.Messages(3)
		if err != nil {
			return err
		}
		for _, r := range pulls {
			list, _ := out["imagePullSecrets"].([]LocalObjectReference)
			out["imagePullSecrets"] = append(list, LocalObjectReference{Name: r.String(1)})
		}
		if v, ok := obj.Bool(4); ok {
			out["automountServiceAccountToken"] = v
		}
		return nil
	})
}
