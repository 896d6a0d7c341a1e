package leases

import "github.com/apikit-dev/apikit/internal/k8sproto"

var leaseProtobuf = k8sproto.NewDecoder[Lease]("Lease")

// ProtobufToJSON decodes a Lease in protobuf (k8s.io/api/coordination/v1's
// field numbers, the protobuf tags on Lease), as client-go's leader
// election posts and puts it.
func ProtobufToJSON(body []byte) ([]byte, error) { return leaseProtobuf.ToJSON(body) }
