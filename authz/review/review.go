package review

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Resources returns the four reviews of authorization.k8s.io/v1, each
// POST-only and never stored: SubjectAccessReview and
// LocalSubjectAccessReview (may a given user do this? so that this server
// can be another's authorization webhook), SelfSubjectAccessReview (may
// I? `kubectl auth can-i`) and SelfSubjectRulesReview (what may I do in a
// namespace? `kubectl auth can-i --list`). They answer with a (the server's
// whole authorizer chain) and r (its rule resolvers).
func Resources(a authz.Authorizer, r authz.RuleResolver) ([]registry.Resource, error) {
	gv := meta.GroupVersion{Group: GroupName, Version: Version}
	sar, err := registry.NewCreateOnly(registry.CreateOnlyOptions[*SubjectAccessReview]{
		GroupVersion: gv, Resource: "subjectaccessreviews", Kind: "SubjectAccessReview", ProtobufToJSON: subjectAccessReviewProtobuf.ToJSON,
		Create: func(ctx context.Context, obj *SubjectAccessReview) (*SubjectAccessReview, error) {
			if errs := validateSpec(obj.Spec, true); len(errs) > 0 {
				return nil, meta.NewInvalid(meta.GroupKind{Group: GroupName, Kind: "SubjectAccessReview"}, "", errs)
			}
			obj.Status = Decide(ctx, a, AttributesFrom(obj.Spec))
			return obj, nil
		},
	})
	if err != nil {
		return nil, err
	}
	lsar, err := registry.NewCreateOnly(registry.CreateOnlyOptions[*LocalSubjectAccessReview]{
		GroupVersion: gv, Resource: "localsubjectaccessreviews", Kind: "LocalSubjectAccessReview", ProtobufToJSON: localSubjectAccessReviewProtobuf.ToJSON, NamespaceScoped: true,
		Create: func(ctx context.Context, obj *LocalSubjectAccessReview) (*LocalSubjectAccessReview, error) {
			errs := validateSpec(obj.Spec, true)
			if obj.Spec.NonResourceAttributes != nil {
				errs = append(errs, meta.Invalid(meta.NewPath("spec", "nonResourceAttributes"), obj.Spec.NonResourceAttributes, "disallowed on this kind of request"))
			}
			if len(errs) > 0 {
				return nil, meta.NewInvalid(meta.GroupKind{Group: GroupName, Kind: "LocalSubjectAccessReview"}, "", errs)
			}
			if ns := obj.Namespace; ns != obj.Spec.ResourceAttributes.Namespace {
				return nil, meta.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", ns))
			}
			obj.Status = Decide(ctx, a, AttributesFrom(obj.Spec))
			return obj, nil
		},
	})
	if err != nil {
		return nil, err
	}
	ssar, err := registry.NewCreateOnly(registry.CreateOnlyOptions[*SelfSubjectAccessReview]{
		GroupVersion: gv, Resource: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview", ProtobufToJSON: selfSubjectAccessReviewProtobuf.ToJSON,
		Create: func(ctx context.Context, obj *SelfSubjectAccessReview) (*SelfSubjectAccessReview, error) {
			u, ok := authn.UserFrom(ctx)
			if !ok {
				return nil, meta.NewBadRequest("no user present on request")
			}
			spec := SubjectAccessReviewSpec{ResourceAttributes: obj.Spec.ResourceAttributes, NonResourceAttributes: obj.Spec.NonResourceAttributes}
			if errs := validateSpec(spec, false); len(errs) > 0 {
				return nil, meta.NewInvalid(meta.GroupKind{Group: GroupName, Kind: "SelfSubjectAccessReview"}, "", errs)
			}
			attrs := AttributesFrom(spec)
			attrs.User = u
			obj.Status = Decide(ctx, a, attrs)
			return obj, nil
		},
	})
	if err != nil {
		return nil, err
	}
	ssrr, err := registry.NewCreateOnly(registry.CreateOnlyOptions[*SelfSubjectRulesReview]{
		GroupVersion: gv, Resource: "selfsubjectrulesreviews", Kind: "SelfSubjectRulesReview", ProtobufToJSON: selfSubjectRulesReviewProtobuf.ToJSON,
		Create: func(ctx context.Context, obj *SelfSubjectRulesReview) (*SelfSubjectRulesReview, error) {
			u, ok := authn.UserFrom(ctx)
			if !ok {
				return nil, meta.NewBadRequest("no user present on request")
			}
			if obj.Spec.Namespace == "" {
				return nil, meta.NewBadRequest("no namespace on request")
			}
			obj.Status = Rules(ctx, r, u, obj.Spec.Namespace)
			return obj, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return []registry.Resource{lsar, ssar, ssrr, sar}, nil
}

// validateSpec checks a review's spec with kube-apiserver's messages;
// withSubject requires a user or groups.
func validateSpec(spec SubjectAccessReviewSpec, withSubject bool) meta.FieldErrors {
	var errs meta.FieldErrors
	p := meta.NewPath("spec")
	if spec.ResourceAttributes != nil && spec.NonResourceAttributes != nil {
		errs = append(errs, meta.Invalid(p.Child("nonResourceAttributes"), spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes"))
	}
	if spec.ResourceAttributes == nil && spec.NonResourceAttributes == nil {
		errs = append(errs, meta.Invalid(p.Child("resourceAttributes"), spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if withSubject && spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, meta.Invalid(p.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// AttributesFrom turns a review's spec into authorization attributes.
func AttributesFrom(spec SubjectAccessReviewSpec) authz.Attributes {
	u := &authn.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	a := authz.Attributes{User: u}
	if ra := spec.ResourceAttributes; ra != nil {
		a.ResourceRequest = true
		a.Verb, a.Namespace, a.Name = ra.Verb, ra.Namespace, ra.Name
		a.APIGroup, a.APIVersion, a.Resource, a.Subresource = ra.Group, ra.Version, ra.Resource, ra.Subresource
	} else if na := spec.NonResourceAttributes; na != nil {
		a.Path, a.Verb = na.Path, na.Verb
	}
	return a
}

// SpecFrom is AttributesFrom's inverse: the spec of a SubjectAccessReview
// asking about a, as a webhook authorizer posts it.
func SpecFrom(a authz.Attributes) SubjectAccessReviewSpec {
	var spec SubjectAccessReviewSpec
	if u := a.User; u != nil {
		spec.User, spec.UID, spec.Groups = u.Name, u.UID, u.Groups
		if len(u.Extra) > 0 {
			spec.Extra = make(map[string]ExtraValue, len(u.Extra))
			for k, v := range u.Extra {
				spec.Extra[k] = v
			}
		}
	}
	if a.ResourceRequest {
		spec.ResourceAttributes = &ResourceAttributes{Namespace: a.Namespace, Verb: a.Verb, Group: a.APIGroup,
			Version: a.APIVersion, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name}
	} else {
		spec.NonResourceAttributes = &NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	return spec
}

// Decide asks a and phrases the answer as a review's status.
func Decide(ctx context.Context, a authz.Authorizer, attrs authz.Attributes) SubjectAccessReviewStatus {
	d, reason, err := a.Authorize(ctx, attrs)
	st := SubjectAccessReviewStatus{Allowed: d == authz.DecisionAllow, Denied: d == authz.DecisionDeny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

// Rules asks r what u may do in namespace and phrases it as a rules
// review's status.
func Rules(ctx context.Context, r authz.RuleResolver, u *authn.User, namespace string) SubjectRulesReviewStatus {
	resource, nonResource, incomplete, err := r.RulesFor(ctx, u, namespace)
	st := SubjectRulesReviewStatus{
		ResourceRules:    make([]ResourceRule, 0, len(resource)),
		NonResourceRules: make([]NonResourceRule, 0, len(nonResource)),
		Incomplete:       incomplete,
	}
	for _, rr := range resource {
		st.ResourceRules = append(st.ResourceRules, ResourceRule{Verbs: rr.Verbs, APIGroups: rr.APIGroups, Resources: rr.Resources, ResourceNames: rr.ResourceNames})
	}
	for _, nr := range nonResource {
		st.NonResourceRules = append(st.NonResourceRules, NonResourceRule{Verbs: nr.Verbs, NonResourceURLs: nr.NonResourceURLs})
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}
