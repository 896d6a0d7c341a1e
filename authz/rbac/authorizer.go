package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
)

// Authorizer decides with the RBAC policy an Index holds: it allows a
// request when a rule of a role bound to the user (by name, by one of their
// groups, or as a service account) allows it, and has no opinion
// otherwise, so that the next mode may decide. It is also the
// authz.RuleResolver of SelfSubjectRulesReview.
//
// Nothing is cached between requests: every decision reads the index as it
// is, so a binding removed from storage stops granting as soon as the watch
// delivers the deletion.
type Authorizer struct {
	index *Index
}

// NewAuthorizer returns an Authorizer over index.
func NewAuthorizer(index *Index) *Authorizer { return &Authorizer{index: index} }

// source says where a rule came from, for the reason of an allowed
// request.
type source struct {
	bindingKind, bindingNamespace, bindingName string
	roleRef                                    *RoleRef
	subject                                    subjectKey
}

func (s source) String() string {
	kind := UserKind
	if s.subject.group {
		kind = GroupKind
	}
	name := s.bindingName
	if s.bindingNamespace != "" {
		name += "/" + s.bindingNamespace
	}
	return fmt.Sprintf("%s %q of %s %q to %s %q", s.bindingKind, name, s.roleRef.Kind, s.roleRef.Name, kind, s.subject.name)
}

// visit calls fn with every rule bound to u cluster-wide and, when
// namespace is set, in that namespace, until fn returns false. It returns
// what it could not resolve (bindings of missing roles), in
// kube-apiserver's words. The index is read-locked meanwhile: fn must not
// call back into it.
func (x *Index) visit(u *authn.User, namespace string, fn func(src source, rule *PolicyRule) bool) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var problems []string
	n := len(u.Groups) + 1
	for i := 0; i < n; i++ {
		key := subjectKey{name: u.Name}
		if i > 0 {
			key = subjectKey{group: true, name: u.Groups[i-1]}
		}
		for _, b := range x.crbBySubject[key] {
			role, ok := x.clusterRoles[b.RoleRef.Name]
			if !ok || b.RoleRef.Kind != KindClusterRole {
				problems = append(problems, notFound(b.RoleRef))
				continue
			}
			for j := range role.Rules {
				if !fn(source{KindClusterRoleBinding, "", b.Name, &b.RoleRef, key}, &role.Rules[j]) {
					return nil
				}
			}
		}
		if namespace == "" {
			continue
		}
		for _, b := range x.rbBySubject[nsSubjectKey{namespace, key}] {
			rules, ok := x.roleRulesLocked(b.RoleRef, namespace)
			if !ok {
				problems = append(problems, notFound(b.RoleRef))
				continue
			}
			for j := range rules {
				if !fn(source{KindRoleBinding, namespace, b.Name, &b.RoleRef, key}, &rules[j]) {
					return nil
				}
			}
		}
	}
	return problems
}

func (x *Index) roleRulesLocked(ref RoleRef, namespace string) ([]PolicyRule, bool) {
	switch ref.Kind {
	case KindRole:
		r, ok := x.roles[namespace][ref.Name]
		if !ok {
			return nil, false
		}
		return r.Rules, true
	case KindClusterRole:
		r, ok := x.clusterRoles[ref.Name]
		if !ok {
			return nil, false
		}
		return r.Rules, true
	}
	return nil, false
}

func notFound(ref RoleRef) string {
	return fmt.Sprintf("%s.%s %q not found", strings.ToLower(ref.Kind), GroupName, ref.Name)
}

// Authorize allows the request when a rule bound to the user allows it,
// with the binding as the reason, as kube-apiserver words it. Otherwise it
// has no opinion and, as kube-apiserver's RBAC, gives a reason only when a
// binding could not be resolved (its role is missing): `kubectl auth can-i`
// prints a denial's reason after "no", and scripts compare that output.
func (a *Authorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	if attrs.User == nil {
		return authz.DecisionNoOpinion, "", nil
	}
	if !a.index.HasSynced() {
		return authz.DecisionNoOpinion, "RBAC: the policy is not loaded yet", nil
	}
	var (
		allowed   bool
		allowedBy source
	)
	problems := a.index.visit(attrs.User, attrs.Namespace, func(src source, rule *PolicyRule) bool {
		if RuleAllows(&attrs, rule) {
			allowed, allowedBy = true, src
			return false
		}
		return true
	})
	if allowed {
		return authz.DecisionAllow, "RBAC: allowed by " + allowedBy.String(), nil
	}
	if len(problems) == 0 {
		return authz.DecisionNoOpinion, "", nil
	}
	return authz.DecisionNoOpinion, "RBAC: " + aggregateMessage(problems), nil
}

// aggregateMessage words several errors as Kubernetes' error aggregate
// does: one message alone, several distinct ones as "[a, b]".
func aggregateMessage(msgs []string) string {
	var distinct []string
	for _, m := range msgs {
		if !slices.Contains(distinct, m) {
			distinct = append(distinct, m)
		}
	}
	if len(distinct) == 1 {
		return distinct[0]
	}
	return "[" + strings.Join(distinct, ", ") + "]"
}

// Rules returns the rules bound to u in namespace (cluster-wide ones
// included), and an error naming the bound roles that do not exist.
func (a *Authorizer) Rules(u *authn.User, namespace string) ([]PolicyRule, error) {
	var rules []PolicyRule
	problems := a.index.visit(u, namespace, func(_ source, rule *PolicyRule) bool {
		rules = append(rules, *rule)
		return true
	})
	if !a.index.HasSynced() {
		problems = append(problems, "the policy is not loaded yet")
	}
	if len(problems) > 0 {
		return rules, errors.New(strings.Join(problems, "; "))
	}
	return rules, nil
}

// RulesFor implements authz.RuleResolver.
func (a *Authorizer) RulesFor(_ context.Context, u *authn.User, namespace string) ([]authz.ResourceRuleInfo, []authz.NonResourceRuleInfo, bool, error) {
	if u == nil {
		return nil, nil, false, nil
	}
	rules, err := a.Rules(u, namespace)
	var resource []authz.ResourceRuleInfo
	var nonResource []authz.NonResourceRuleInfo
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resource = append(resource, authz.ResourceRuleInfo{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResource = append(nonResource, authz.NonResourceRuleInfo{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	return resource, nonResource, false, err
}

// RoleRefRules returns the rules of the role a binding in namespace ("" for
// a ClusterRoleBinding) refers to.
func (a *Authorizer) RoleRefRules(ref RoleRef, namespace string) ([]PolicyRule, error) {
	a.index.mu.RLock()
	defer a.index.mu.RUnlock()
	rules, ok := a.index.roleRulesLocked(ref, namespace)
	if !ok {
		return nil, errors.New(notFound(ref))
	}
	return rules, nil
}
