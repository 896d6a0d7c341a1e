package review

import "github.com/apikit-dev/apikit/internal/k8sproto"

// The reviews in Kubernetes' protobuf encoding, as client-go's typed
// clients (kubectl auth whoami, a delegated server's TokenReview client)
// post them, are read by the protobuf tags on their types
// (k8s.io/api/authentication/v1's field numbers). Only metadata and the
// spec are tagged: the status is the server's to fill.
var (
	tokenReviewProtobuf       = k8sproto.NewDecoder[TokenReview]("TokenReview")
	selfSubjectReviewProtobuf = k8sproto.NewDecoder[SelfSubjectReview]("SelfSubjectReview")
)
