package registration

// The accessors below are what the two admission policy kinds and their
// bindings share: package admission/policyset matches, binds and
// parameterizes both through them, as kube-apiserver's generic policy
// framework does through its PolicyAccessor and BindingAccessor.

// GetParamKind returns the policy's paramKind, nil without one.
func (p *ValidatingAdmissionPolicy) GetParamKind() *ParamKind { return p.Spec.ParamKind }

// GetMatchConstraints returns the resources the policy matches.
func (p *ValidatingAdmissionPolicy) GetMatchConstraints() *MatchResources {
	return p.Spec.MatchConstraints
}

// GetParamKind returns the policy's paramKind, nil without one.
func (p *MutatingAdmissionPolicy) GetParamKind() *ParamKind { return p.Spec.ParamKind }

// GetMatchConstraints returns the resources the policy matches.
func (p *MutatingAdmissionPolicy) GetMatchConstraints() *MatchResources {
	return p.Spec.MatchConstraints
}

// GetPolicyName returns the name of the policy the binding puts in force.
func (b *ValidatingAdmissionPolicyBinding) GetPolicyName() string { return b.Spec.PolicyName }

// GetParamRef returns the binding's paramRef, nil without one.
func (b *ValidatingAdmissionPolicyBinding) GetParamRef() *ParamRef { return b.Spec.ParamRef }

// GetMatchResources returns the binding's matchResources, nil when it
// applies wherever its policy matches.
func (b *ValidatingAdmissionPolicyBinding) GetMatchResources() *MatchResources {
	return b.Spec.MatchResources
}

// GetPolicyName returns the name of the policy the binding puts in force.
func (b *MutatingAdmissionPolicyBinding) GetPolicyName() string { return b.Spec.PolicyName }

// GetParamRef returns the binding's paramRef, nil without one.
func (b *MutatingAdmissionPolicyBinding) GetParamRef() *ParamRef { return b.Spec.ParamRef }

// GetMatchResources returns the binding's matchResources, nil when it
// applies wherever its policy matches.
func (b *MutatingAdmissionPolicyBinding) GetMatchResources() *MatchResources {
	return b.Spec.MatchResources
}
