package registration

import "github.com/apikit-dev/apikit/internal/k8sproto"

// The protobuf decoders of admissionregistration.k8s.io/v1's kinds, which
// client-go's typed clients (cert-manager's, kyverno's, controller-runtime
// installers') post in protobuf; field numbers are the protobuf tags on
// the types, those of k8s.io/api's generated.proto.
var (
	mutatingWebhooksProtobuf   = k8sproto.NewDecoder[MutatingWebhookConfiguration]("MutatingWebhookConfiguration")
	validatingWebhooksProtobuf = k8sproto.NewDecoder[ValidatingWebhookConfiguration]("ValidatingWebhookConfiguration")
	policiesProtobuf           = k8sproto.NewDecoder[ValidatingAdmissionPolicy]("ValidatingAdmissionPolicy")
	bindingsProtobuf           = k8sproto.NewDecoder[ValidatingAdmissionPolicyBinding]("ValidatingAdmissionPolicyBinding")
	mutatingPoliciesProtobuf   = k8sproto.NewDecoder[MutatingAdmissionPolicy]("MutatingAdmissionPolicy")
	mutatingBindingsProtobuf   = k8sproto.NewDecoder[MutatingAdmissionPolicyBinding]("MutatingAdmissionPolicyBinding")
)
