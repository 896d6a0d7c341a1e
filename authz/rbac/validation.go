package rbac

import (
	"context"
	"reflect"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// ValidateName is the NameValidator of RBAC objects: any path segment
// ("system:discovery" is a valid name), as kube-apiserver's
// ValidateRBACName has it, which judges a generateName prefix as a whole
// name (so "." is refused there too).
func ValidateName(name string, _ bool) []string {
	return meta.ValidatePathSegmentName(name, false)
}

// ValidatePolicyRule checks one rule with kube-apiserver's messages.
// Namespaced rules (of a Role) cannot name non-resource URLs.
func ValidatePolicyRule(r PolicyRule, namespaced bool, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	if len(r.Verbs) == 0 {
		errs = append(errs, meta.Required(p.Child("verbs"), ""))
	}
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, meta.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, meta.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, meta.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, meta.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

func validateRules(rules []PolicyRule, namespaced bool) meta.FieldErrors {
	var errs meta.FieldErrors
	for i, r := range rules {
		errs = append(errs, ValidatePolicyRule(r, namespaced, meta.NewPath("rules").Index(i))...)
	}
	return errs
}

func validateAggregationRule(a *AggregationRule) meta.FieldErrors {
	if a == nil {
		return nil
	}
	p := meta.NewPath("aggregationRule")
	if len(a.ClusterRoleSelectors) == 0 {
		return meta.FieldErrors{meta.Required(p.Child("clusterRoleSelectors"), "at least one clusterRoleSelector required if aggregationRule is non-nil")}
	}
	var errs meta.FieldErrors
	for i := range a.ClusterRoleSelectors {
		if _, err := a.ClusterRoleSelectors[i].AsSelector(); err != nil {
			errs = append(errs, meta.Invalid(p.Child("clusterRoleSelectors").Index(i), a.ClusterRoleSelectors[i], err.Error()))
		}
	}
	return errs
}

// validateBinding checks a binding's roleRef and subjects; clusterScoped
// is true for a ClusterRoleBinding, which may only refer to ClusterRoles
// and must name its service accounts' namespaces.
func validateBinding(ref RoleRef, subjects []Subject, clusterScoped bool) meta.FieldErrors {
	var errs meta.FieldErrors
	rp := meta.NewPath("roleRef")
	if ref.APIGroup != GroupName {
		errs = append(errs, meta.NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{GroupName}))
	}
	switch {
	case clusterScoped && ref.Kind != KindClusterRole:
		errs = append(errs, meta.NotSupported(rp.Child("kind"), ref.Kind, []string{KindClusterRole}))
	case !clusterScoped && ref.Kind != KindRole && ref.Kind != KindClusterRole:
		errs = append(errs, meta.NotSupported(rp.Child("kind"), ref.Kind, []string{KindRole, KindClusterRole}))
	}
	if ref.Name == "" {
		errs = append(errs, meta.Required(rp.Child("name"), ""))
	} else {
		for _, msg := range ValidateName(ref.Name, false) {
			errs = append(errs, meta.Invalid(rp.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		p := meta.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, meta.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range meta.ValidateDNS1123Subdomain(s.Name) {
					errs = append(errs, meta.Invalid(p.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, meta.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if clusterScoped && s.Namespace == "" {
				errs = append(errs, meta.Required(p.Child("namespace"), ""))
			}
		case UserKind, GroupKind:
			if s.APIGroup != GroupName {
				errs = append(errs, meta.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{GroupName}))
			}
		default:
			errs = append(errs, meta.NotSupported(p.Child("kind"), s.Kind, []string{ServiceAccountKind, UserKind, GroupKind}))
		}
	}
	return errs
}

// roleStrategy, clusterRoleStrategy and the binding strategies validate
// as kube-apiserver does; a binding's roleRef cannot change.
type roleStrategy struct {
	registry.DefaultStrategy[*Role]
}

func (roleStrategy) Validate(_ context.Context, r *Role) meta.FieldErrors {
	return validateRules(r.Rules, true)
}

func (roleStrategy) ValidateUpdate(_ context.Context, r, _ *Role) meta.FieldErrors {
	return validateRules(r.Rules, true)
}

type clusterRoleStrategy struct {
	registry.DefaultStrategy[*ClusterRole]
}

func (clusterRoleStrategy) Validate(_ context.Context, r *ClusterRole) meta.FieldErrors {
	return append(validateRules(r.Rules, false), validateAggregationRule(r.AggregationRule)...)
}

func (s clusterRoleStrategy) ValidateUpdate(ctx context.Context, r, _ *ClusterRole) meta.FieldErrors {
	return s.Validate(ctx, r)
}

type roleBindingStrategy struct {
	registry.DefaultStrategy[*RoleBinding]
}

// Default implements registry.Defaulter with kube-apiserver's rbac/v1
// defaults: a binding may leave out the apiGroup of its roleRef and of
// its User and Group subjects.
func (roleBindingStrategy) Default(b *RoleBinding) { defaultBinding(&b.RoleRef, b.Subjects) }

// Default implements registry.Defaulter as roleBindingStrategy's does.
func (clusterRoleBindingStrategy) Default(b *ClusterRoleBinding) {
	defaultBinding(&b.RoleRef, b.Subjects)
}

func defaultBinding(ref *RoleRef, subjects []Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = GroupName
	}
	for i := range subjects {
		if s := &subjects[i]; s.APIGroup == "" && (s.Kind == UserKind || s.Kind == GroupKind) {
			s.APIGroup = GroupName
		}
	}
}

func (roleBindingStrategy) Validate(_ context.Context, b *RoleBinding) meta.FieldErrors {
	return validateBinding(b.RoleRef, b.Subjects, false)
}

func (roleBindingStrategy) ValidateUpdate(_ context.Context, b, old *RoleBinding) meta.FieldErrors {
	errs := validateBinding(b.RoleRef, b.Subjects, false)
	if b.RoleRef != old.RoleRef {
		errs = append(errs, meta.Invalid(meta.NewPath("roleRef"), b.RoleRef, "cannot change roleRef"))
	}
	return errs
}

type clusterRoleBindingStrategy struct {
	registry.DefaultStrategy[*ClusterRoleBinding]
}

func (clusterRoleBindingStrategy) Validate(_ context.Context, b *ClusterRoleBinding) meta.FieldErrors {
	return validateBinding(b.RoleRef, b.Subjects, true)
}

func (clusterRoleBindingStrategy) ValidateUpdate(_ context.Context, b, old *ClusterRoleBinding) meta.FieldErrors {
	errs := validateBinding(b.RoleRef, b.Subjects, true)
	if b.RoleRef != old.RoleRef {
		errs = append(errs, meta.Invalid(meta.NewPath("roleRef"), b.RoleRef, "cannot change roleRef"))
	}
	return errs
}

// semanticRulesEqual compares rule lists, a nil list equal to an empty one.
func semanticRulesEqual(a, b []PolicyRule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !ruleEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func ruleEqual(a, b PolicyRule) bool {
	eq := func(x, y []string) bool {
		if len(x) == 0 && len(y) == 0 {
			return true
		}
		return reflect.DeepEqual(x, y)
	}
	return eq(a.Verbs, b.Verbs) && eq(a.APIGroups, b.APIGroups) && eq(a.Resources, b.Resources) &&
		eq(a.ResourceNames, b.ResourceNames) && eq(a.NonResourceURLs, b.NonResourceURLs)
}
