package authz

import (
	"context"
	"errors"
	"strings"

	"github.com/apikit-dev/apikit/authn"
)

// Union asks authorizers in order: the first that allows or denies
// decides. When none does, the result is NoOpinion with every reason given
// (one per line) and every error joined, as kube-apiserver's union
// authorizer answers. A single authorizer is returned as is.
func Union(authorizers ...Authorizer) Authorizer {
	if len(authorizers) == 1 {
		return authorizers[0]
	}
	return union(append([]Authorizer(nil), authorizers...))
}

type union []Authorizer

func (u union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range u {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if d != DecisionNoOpinion {
			// A decisive answer wins; errors of earlier authorizers that
			// had no opinion do not matter any more.
			return d, reason, nil
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}

// UnionRuleResolver lists the rules of every resolver together: a user may
// do what any of them allows. The result is incomplete when any resolver's
// is, and the errors are joined.
func UnionRuleResolver(resolvers ...RuleResolver) RuleResolver {
	if len(resolvers) == 1 {
		return resolvers[0]
	}
	return unionResolver(append([]RuleResolver(nil), resolvers...))
}

type unionResolver []RuleResolver

func (u unionResolver) RulesFor(ctx context.Context, user *authn.User, namespace string) ([]ResourceRuleInfo, []NonResourceRuleInfo, bool, error) {
	var (
		resource    []ResourceRuleInfo
		nonResource []NonResourceRuleInfo
		incomplete  bool
		errs        []error
	)
	for _, r := range u {
		rr, nr, inc, err := r.RulesFor(ctx, user, namespace)
		resource = append(resource, rr...)
		nonResource = append(nonResource, nr...)
		incomplete = incomplete || inc
		if err != nil {
			errs = append(errs, err)
		}
	}
	return resource, nonResource, incomplete, errors.Join(errs...)
}
