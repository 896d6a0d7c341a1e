package mutatingpolicy

import (
	"context"
	"slices"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/meta"
)

// matcher is a MatchResources with its selectors parsed.
type matcher struct {
	m                 *registration.MatchResources
	equivalent        bool
	namespaceSelector meta.Selector
	objectSelector    meta.Selector
	err               error
}

func newMatcher(m *registration.MatchResources) *matcher {
	out := &matcher{m: m, equivalent: m.MatchPolicy == nil || *m.MatchPolicy == registration.Equivalent,
		namespaceSelector: meta.Everything(), objectSelector: meta.Everything()}
	if m.NamespaceSelector != nil {
		out.namespaceSelector, out.err = m.NamespaceSelector.AsSelector()
	}
	if m.ObjectSelector != nil && out.err == nil {
		out.objectSelector, out.err = m.ObjectSelector.AsSelector()
	}
	return out
}

// version is where a matcher matched a write: the request's resource, or
// an equivalent's.
type version struct {
	kind                 meta.GroupVersionKind
	resource             meta.GroupVersionResource
	toVersion, toStorage func(meta.Object) (meta.Object, error)
	own                  bool
}

// matches is kube-apiserver's policy matcher: namespace and object
// selectors, then excludeResourceRules, then resourceRules (none: all),
// in the request's version or, with matchPolicy Equivalent, another.
func (m *matcher) matches(ctx context.Context, namespaces webhook.NamespaceLabels, a *admission.Attributes) (*version, error) {
	if m.err != nil {
		return nil, m.err
	}
	nsOK, nsErr := webhook.NamespaceMatches(ctx, namespaces, m.namespaceSelector, a)
	if nsErr == nil && !nsOK {
		return nil, nil
	}
	if !webhook.ObjectMatches(m.objectSelector, a) {
		return nil, nil
	}
	own := &version{kind: a.Kind, resource: a.Resource, toVersion: a.ToVersion, toStorage: a.ToStorage, own: true}
	if v := m.find(m.m.ExcludeResourceRules, a, own); v != nil {
		return nil, nil
	}
	v := own
	if len(m.m.ResourceRules) > 0 {
		v = m.find(m.m.ResourceRules, a, own)
	}
	if v == nil {
		return nil, nil
	}
	return v, nsErr
}

// find returns the first version of a that rules match.
func (m *matcher) find(rules []registration.NamedRuleWithOperations, a *admission.Attributes, own *version) *version {
	if namedRulesMatch(rules, a, a.Resource) {
		return own
	}
	if m.equivalent {
		for _, e := range a.Equivalents {
			if namedRulesMatch(rules, a, e.Resource) {
				return &version{kind: e.Kind, resource: e.Resource, toVersion: e.ToVersion, toStorage: e.ToStorage}
			}
		}
	}
	return nil
}

func namedRulesMatch(rules []registration.NamedRuleWithOperations, a *admission.Attributes, gvr meta.GroupVersionResource) bool {
	for i := range rules {
		r := &rules[i]
		if webhook.RuleMatches(&r.RuleWithOperations, a, gvr) && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.Name)) {
			return true
		}
	}
	return false
}
