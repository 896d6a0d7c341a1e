package policyset

import (
	"context"
	"slices"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/meta"
)

// Matcher is a MatchResources with its selectors parsed.
type Matcher struct {
	m                 *registration.MatchResources
	equivalent        bool
	namespaceSelector meta.Selector
	objectSelector    meta.Selector
	// err is a selector that does not parse (stored before a server that
	// refuses it): every match is an error.
	err error
}

// NewMatcher returns the matcher of m.
func NewMatcher(m *registration.MatchResources) *Matcher {
	out := &Matcher{m: m, equivalent: m.MatchPolicy == nil || *m.MatchPolicy == registration.Equivalent,
		namespaceSelector: meta.Everything(), objectSelector: meta.Everything()}
	if m.NamespaceSelector != nil {
		out.namespaceSelector, out.err = m.NamespaceSelector.AsSelector()
	}
	if m.ObjectSelector != nil && out.err == nil {
		out.objectSelector, out.err = m.ObjectSelector.AsSelector()
	}
	return out
}

// Version is where a matcher matched a write: the request's resource, or
// an equivalent's.
type Version struct {
	Kind     meta.GroupVersionKind
	Resource meta.GroupVersionResource
	// ToVersion and ToStorage convert the write's object to this version
	// and back (the request's own conversions when Own).
	ToVersion, ToStorage func(meta.Object) (meta.Object, error)
	// Own is the request's own version.
	Own bool
}

// Matches is kube-apiserver's policy matcher: namespace and object
// selectors, then excludeResourceRules, then resourceRules (none: all),
// in the request's version or, with matchPolicy Equivalent, another. It
// returns nil when a does not match; an error looking up the namespace's
// labels is returned with the version a would match in.
func (m *Matcher) Matches(ctx context.Context, namespaces webhook.NamespaceLabels, a *admission.Attributes) (*Version, error) {
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
	own := &Version{Kind: a.Kind, Resource: a.Resource, ToVersion: a.ToVersion, ToStorage: a.ToStorage, Own: true}
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
func (m *Matcher) find(rules []registration.NamedRuleWithOperations, a *admission.Attributes, own *Version) *Version {
	if namedRulesMatch(rules, a, a.Resource) {
		return own
	}
	if m.equivalent {
		for _, e := range a.Equivalents {
			if namedRulesMatch(rules, a, e.Resource) {
				return &Version{Kind: e.Kind, Resource: e.Resource, ToVersion: e.ToVersion, ToStorage: e.ToStorage}
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

// Vars returns the CEL view of a as matched in v (admission/webhook's
// ExpressionVars): object and oldObject in v's version, and request
// when reads has it.
func (v *Version) Vars(a *admission.Attributes, reads Reads) (map[string]any, error) {
	toVersion := v.ToVersion
	if v.Own {
		// The request's own version is a.VersionedObject, already there.
		toVersion = nil
	}
	return webhook.ExpressionVars(a, v.Kind, v.Resource, toVersion, reads.Request)
}
