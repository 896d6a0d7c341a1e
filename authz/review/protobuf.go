package review

import "github.com/apikit-dev/apikit/internal/k8sproto"

// kubectl (client-go's typed clients) posts the reviews of this built-in
// group in Kubernetes' protobuf encoding; they are read by the protobuf
// tags on their types (k8s.io/api/authorization/v1's field numbers). Only
// metadata and the spec are tagged: the status is the server's to fill.
var (
	subjectAccessReviewProtobuf      = k8sproto.NewDecoder[SubjectAccessReview]("SubjectAccessReview")
	localSubjectAccessReviewProtobuf = k8sproto.NewDecoder[LocalSubjectAccessReview]("LocalSubjectAccessReview")
	selfSubjectAccessReviewProtobuf  = k8sproto.NewDecoder[SelfSubjectAccessReview]("SelfSubjectAccessReview")
	selfSubjectRulesReviewProtobuf   = k8sproto.NewDecoder[SelfSubjectRulesReview]("SelfSubjectRulesReview")
)
