package registration

import (
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// PolicyStores are one server's ValidatingAdmissionPolicies and their
// bindings.
type PolicyStores struct {
	Policies *registry.Store[*ValidatingAdmissionPolicy]
	Bindings *registry.Store[*ValidatingAdmissionPolicyBinding]
}

// NewPolicyStores builds the stores on the storage f gives each resource.
func NewPolicyStores(f storage.Factory) (*PolicyStores, error) {
	ps, err := f.For(ValidatingAdmissionPolicies)
	if err != nil {
		return nil, fmt.Errorf("validatingadmissionpolicies storage: %w", err)
	}
	bs, err := f.For(ValidatingAdmissionPolicyBindings)
	if err != nil {
		return nil, fmt.Errorf("validatingadmissionpolicybindings storage: %w", err)
	}
	p, err := registry.NewStore(registry.Options[*ValidatingAdmissionPolicy]{
		Resource:       ValidatingAdmissionPolicies,
		Kind:           "ValidatingAdmissionPolicy",
		Categories:     []string{"api-extensions"},
		StorageVersion: Version,
		// status.typeChecking is written through /status, as kube's
		// type-checking controller writes it.
		StatusSubresource: true,
		Strategy: strategy[*ValidatingAdmissionPolicy]{defaults: SetPolicyDefaults,
			validate: ValidatePolicy, validateUpdate: ValidatePolicyUpdate},
		Storage: ps,
		// kube-apiserver's printer columns.
		Columns: []registry.Column[*ValidatingAdmissionPolicy]{
			{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration",
				Value: func(p *ValidatingAdmissionPolicy) any { return int64(len(p.Spec.Validations)) }},
			{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy",
				Value: func(p *ValidatingAdmissionPolicy) any {
					if k := p.Spec.ParamKind; k != nil {
						return k.APIVersion + "/" + k.Kind
					}
					return "<unset>"
				}},
		},
	})
	if err != nil {
		return nil, err
	}
	b, err := registry.NewStore(registry.Options[*ValidatingAdmissionPolicyBinding]{
		Resource:       ValidatingAdmissionPolicyBindings,
		Kind:           "ValidatingAdmissionPolicyBinding",
		Categories:     []string{"api-extensions"},
		StorageVersion: Version,
		Strategy: strategy[*ValidatingAdmissionPolicyBinding]{defaults: SetBindingDefaults,
			validate: ValidateBinding, validateUpdate: func(b, _ *ValidatingAdmissionPolicyBinding) meta.FieldErrors { return ValidateBinding(b) }},
		Storage: bs,
		Columns: []registry.Column[*ValidatingAdmissionPolicyBinding]{
			{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the name of the policy that this binding references",
				Value: func(b *ValidatingAdmissionPolicyBinding) any { return b.Spec.PolicyName }},
			{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource that this binding references",
				Value: func(b *ValidatingAdmissionPolicyBinding) any { return paramRefColumn(b.Spec.ParamRef) }},
		},
	})
	if err != nil {
		return nil, err
	}
	return &PolicyStores{Policies: p, Bindings: b}, nil
}

// paramRefColumn is kube-apiserver's PARAMREF: a param without a
// namespace may be cluster-scoped or in the request's, hence "*/".
func paramRefColumn(r *ParamRef) string {
	switch {
	case r == nil:
		return "<unset>"
	case r.Name != "" && r.Namespace != "":
		return r.Namespace + "/" + r.Name
	case r.Name != "":
		return "*/" + r.Name
	case r.Selector != nil:
		return selectorString(r.Selector)
	}
	return "<unset>"
}

func selectorString(s *meta.LabelSelector) string {
	sel, err := s.AsSelector()
	if err != nil {
		return "<error>"
	}
	return sel.String()
}

// Resources returns what a server installs beside the webhook
// configurations.
func (s *PolicyStores) Resources() []registry.Resource {
	return []registry.Resource{registry.ServeProtobuf(s.Policies, policiesProtobuf.ToJSON),
		registry.ServeProtobuf(s.Bindings, bindingsProtobuf.ToJSON)}
}
