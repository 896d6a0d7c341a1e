package registration

import (
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// MutatingPolicyStores are one server's MutatingAdmissionPolicies and
// their bindings.
type MutatingPolicyStores struct {
	Policies *registry.Store[*MutatingAdmissionPolicy]
	Bindings *registry.Store[*MutatingAdmissionPolicyBinding]
}

// NewMutatingPolicyStores builds the stores on the storage f gives each
// resource.
func NewMutatingPolicyStores(f storage.Factory) (*MutatingPolicyStores, error) {
	ps, err := f.For(MutatingAdmissionPolicies)
	if err != nil {
		return nil, fmt.Errorf("mutatingadmissionpolicies storage: %w", err)
	}
	bs, err := f.For(MutatingAdmissionPolicyBindings)
	if err != nil {
		return nil, fmt.Errorf("mutatingadmissionpolicybindings storage: %w", err)
	}
	p, err := registry.NewStore(registry.Options[*MutatingAdmissionPolicy]{
		Resource:       MutatingAdmissionPolicies,
		Kind:           "MutatingAdmissionPolicy",
		Categories:     []string{"api-extensions"},
		StorageVersion: Version,
		Strategy: strategy[*MutatingAdmissionPolicy]{defaults: SetMutatingPolicyDefaults,
			validate: ValidateMutatingPolicy, validateUpdate: ValidateMutatingPolicyUpdate},
		Storage: ps,
		// kube-apiserver's printer columns.
		Columns: []registry.Column[*MutatingAdmissionPolicy]{
			{Name: "Mutations", Type: "integer", Description: "Mutations indicates the number of mutations rules defined in this configuration",
				Value: func(p *MutatingAdmissionPolicy) any { return int64(len(p.Spec.Mutations)) }},
			{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy",
				Value: func(p *MutatingAdmissionPolicy) any { return paramKindColumn(p.Spec.ParamKind) }},
		},
	})
	if err != nil {
		return nil, err
	}
	b, err := registry.NewStore(registry.Options[*MutatingAdmissionPolicyBinding]{
		Resource:       MutatingAdmissionPolicyBindings,
		Kind:           "MutatingAdmissionPolicyBinding",
		Categories:     []string{"api-extensions"},
		StorageVersion: Version,
		Strategy: strategy[*MutatingAdmissionPolicyBinding]{defaults: SetMutatingBindingDefaults,
			validate: ValidateMutatingBinding, validateUpdate: func(b, _ *MutatingAdmissionPolicyBinding) meta.FieldErrors { return ValidateMutatingBinding(b) }},
		Storage: bs,
		Columns: []registry.Column[*MutatingAdmissionPolicyBinding]{
			{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the name of the policy that this binding references",
				Value: func(b *MutatingAdmissionPolicyBinding) any { return b.Spec.PolicyName }},
			{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource that this binding references",
				Value: func(b *MutatingAdmissionPolicyBinding) any { return paramRefColumn(b.Spec.ParamRef) }},
		},
	})
	if err != nil {
		return nil, err
	}
	return &MutatingPolicyStores{Policies: p, Bindings: b}, nil
}

// paramKindColumn is kube-apiserver's PARAMKIND.
func paramKindColumn(k *ParamKind) string {
	if k == nil {
		return "<unset>"
	}
	return k.APIVersion + "/" + k.Kind
}

// Resources returns what a server installs beside the other
// admissionregistration.k8s.io resources.
func (s *MutatingPolicyStores) Resources() []registry.Resource {
	return []registry.Resource{registry.ServeProtobuf(s.Policies, mutatingPoliciesProtobuf.ToJSON),
		registry.ServeProtobuf(s.Bindings, mutatingBindingsProtobuf.ToJSON)}
}
