package review

import (
	"encoding/json"
	"fmt"

	"github.com/apikit-dev/apikit/internal/k8sproto"
)

// protobufToJSON decodes a review posted in Kubernetes' protobuf encoding,
// as client-go's typed clients (kubectl auth whoami, a delegated server's
// TokenReview client) send them, into the JSON the server decodes as
// usual. Field numbers are those of k8s.io/api/authentication/v1's
// generated.proto; only what a client may set is read (metadata.name and
// the spec): the status is the server's to fill.
func protobufToJSON(wantKind string) func(body []byte) ([]byte, error) {
	return func(body []byte) ([]byte, error) {
		apiVersion, kind, obj, err := k8sproto.Unwrap(body)
		if err != nil {
			return nil, fmt.Errorf("decoding protobuf: %w", err)
		}
		if kind != wantKind {
			return nil, fmt.Errorf("decoding protobuf: got kind %q, want %q", kind, wantKind)
		}
		out := map[string]any{"apiVersion": apiVersion, "kind": kind}
		objectMeta, _, err := obj.Message(1)
		if err != nil {
			return nil, fmt.Errorf("decoding protobuf %s metadata: %w", kind, err)
		}
		if name := objectMeta.String(1); name != "" {
			out["metadata"] = map[string]any{"name": name}
		}
		if kind == "TokenReview" {
			spec, _, err := obj.Message(2)
			if err != nil {
				return nil, fmt.Errorf("decoding protobuf %s spec: %w", kind, err)
			}
			out["spec"] = TokenReviewSpec{Token: spec.String(1), Audiences: spec.Strings(2)}
		}
		return json.Marshal(out)
	}
}
