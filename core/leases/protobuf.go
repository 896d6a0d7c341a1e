package leases

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/internal/k8sproto"
)

// ProtobufToJSON decodes a Lease in protobuf (k8s.io/api/coordination/v1's
// field numbers), as client-go's leader election posts and puts it.
func ProtobufToJSON(body []byte) ([]byte, error) {
	return k8sproto.ToJSON(body, "Lease", func(obj k8sproto.Message, out map[string]any) error {
		spec, ok, err := obj.Message(2)
		if err != nil || !ok {
			return err
		}
		s := map[string]any{}
		// Every field of LeaseSpec is a pointer: set means present, even
		// when empty, so strings are taken as they come.
		for n, key := range map[protowire.Number]string{1: "holderIdentity", 6: "strategy", 7: "preferredHolder"} {
			if spec.Has(n) {
				s[key] = spec.String(n)
			}
		}
		spec.PutInt32(s, "leaseDurationSeconds", 2)
		spec.PutInt32(s, "leaseTransitions", 5)
		if err := spec.PutMicroTime(s, "acquireTime", 3); err != nil {
			return err
		}
		if err := spec.PutMicroTime(s, "renewTime", 4); err != nil {
			return err
		}
		out["spec"] = s
		return nil
	})
}
