package flowcontrol

import (
	"strings"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/request"
)

// Matches reports whether fs matches a request by user u: any of its
// rules whose subjects include u and whose resource (or non-resource)
// rules include the request. It is Kubernetes' matching, rule for rule.
func Matches(fs *FlowSchema, u *authn.User, info *request.Info) bool {
	for i := range fs.Spec.Rules {
		if matchesRule(&fs.Spec.Rules[i], u, info) {
			return true
		}
	}
	return false
}

func matchesRule(rule *PolicyRulesWithSubjects, u *authn.User, info *request.Info) bool {
	if !matchesASubject(rule.Subjects, u) {
		return false
	}
	if info.IsResourceRequest {
		for i := range rule.ResourceRules {
			if matchesResourceRule(&rule.ResourceRules[i], info) {
				return true
			}
		}
		return false
	}
	for i := range rule.NonResourceRules {
		if matchesNonResourceRule(&rule.NonResourceRules[i], info) {
			return true
		}
	}
	return false
}

func matchesASubject(subjects []Subject, u *authn.User) bool {
	for i := range subjects {
		if matchesSubject(&subjects[i], u) {
			return true
		}
	}
	return false
}

func matchesSubject(s *Subject, u *authn.User) bool {
	switch s.Kind {
	case SubjectKindUser:
		return s.User != nil && (s.User.Name == NameAll || s.User.Name == u.Name)
	case SubjectKindGroup:
		if s.Group == nil {
			return false
		}
		return s.Group.Name == NameAll || u.InGroup(s.Group.Name)
	case SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		return serviceAccountMatches(s.ServiceAccount.Namespace, s.ServiceAccount.Name, u.Name)
	}
	return false
}

// serviceAccountMatches reports whether username is
// system:serviceaccount:<namespace>:<name> (any name for "*"), without
// allocating.
func serviceAccountMatches(namespace, name, username string) bool {
	rest, ok := strings.CutPrefix(username, authn.ServiceAccountUsernamePrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, namespace)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ":")
	if !ok {
		return false
	}
	return name == NameAll || rest == name
}

func matchesResourceRule(rule *ResourcePolicyRule, info *request.Info) bool {
	if !containsOrWildcard(rule.Verbs, info.Verb, VerbAll) ||
		!matchesResource(rule.Resources, info.Resource, info.Subresource) ||
		!containsOrWildcard(rule.APIGroups, info.APIGroup, APIGroupAll) {
		return false
	}
	if info.Namespace == "" {
		return rule.ClusterScope
	}
	return containsOrWildcard(rule.Namespaces, info.Namespace, NamespaceEvery)
}

// matchesResource matches "resource" or "resource/subresource".
func matchesResource(rules []string, resource, subresource string) bool {
	for _, r := range rules {
		if r == ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		if len(r) == len(resource)+1+len(subresource) && strings.HasPrefix(r, resource) &&
			r[len(resource)] == '/' && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

func matchesNonResourceRule(rule *NonResourcePolicyRule, info *request.Info) bool {
	if !containsOrWildcard(rule.Verbs, info.Verb, VerbAll) {
		return false
	}
	for _, u := range rule.NonResourceURLs {
		if matchesNonResourceURL(u, info.Path) {
			return true
		}
	}
	return false
}

// matchesNonResourceURL matches "*", the path itself, a "/prefix/*"
// prefix, and, as Kubernetes does, any path below a rule without "*".
func matchesNonResourceURL(rule, path string) bool {
	if rule == NonResourceAll || rule == path {
		return true
	}
	if p, ok := strings.CutSuffix(rule, "*"); ok {
		return strings.HasPrefix(path, p)
	}
	return len(path) > len(rule) && strings.HasPrefix(path, rule) && path[len(rule)] == '/'
}

func containsOrWildcard(list []string, s, wildcard string) bool {
	for _, v := range list {
		if v == s || v == wildcard {
			return true
		}
	}
	return false
}

// distinguisher returns the flow distinguisher of a request: its user or
// its namespace, or nothing.
func distinguisher(m *FlowDistinguisherMethod, u *authn.User, info *request.Info) string {
	if m == nil {
		return ""
	}
	switch m.Type {
	case FlowDistinguisherMethodByUser:
		return u.Name
	case FlowDistinguisherMethodByNamespace:
		return info.Namespace
	}
	return ""
}
