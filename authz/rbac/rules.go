package rbac

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apikit-dev/apikit/authz"
)

// VerbMatches reports whether the rule allows verb.
func VerbMatches(r *PolicyRule, verb string) bool {
	for _, v := range r.Verbs {
		if v == VerbAll || v == verb {
			return true
		}
	}
	return false
}

// APIGroupMatches reports whether the rule covers group.
func APIGroupMatches(r *PolicyRule, group string) bool {
	for _, g := range r.APIGroups {
		if g == APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// ResourceMatches reports whether the rule covers resource, or its
// subresource when subresource is set: the rule must name
// "resource/subresource", "*/subresource" or "*".
func ResourceMatches(r *PolicyRule, resource, subresource string) bool {
	for _, res := range r.Resources {
		if res == ResourceAll {
			return true
		}
		if subresource == "" {
			if res == resource {
				return true
			}
			continue
		}
		if sub, ok := strings.CutPrefix(res, resource+"/"); ok && sub == subresource {
			return true
		}
		if sub, ok := strings.CutPrefix(res, "*/"); ok && sub == subresource {
			return true
		}
	}
	return false
}

// ResourceNameMatches reports whether the rule covers the object name: a
// rule without ResourceNames covers every name (and requests without one,
// such as list or create), one with ResourceNames only those names.
func ResourceNameMatches(r *PolicyRule, name string) bool {
	if len(r.ResourceNames) == 0 {
		return true
	}
	return name != "" && slices.Contains(r.ResourceNames, name)
}

// NonResourceURLMatches reports whether the rule covers path: "*" covers
// everything, "/prefix/*" every path under /prefix/.
func NonResourceURLMatches(r *PolicyRule, path string) bool {
	for _, u := range r.NonResourceURLs {
		if u == NonResourceAll || u == path {
			return true
		}
		if prefix, ok := strings.CutSuffix(u, "*"); ok && strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// RuleAllows reports whether the rule allows the request the attributes
// describe.
func RuleAllows(a *authz.Attributes, r *PolicyRule) bool {
	if a.ResourceRequest {
		return VerbMatches(r, a.Verb) &&
			APIGroupMatches(r, a.APIGroup) &&
			ResourceMatches(r, a.Resource, a.Subresource) &&
			ResourceNameMatches(r, a.Name)
	}
	return VerbMatches(r, a.Verb) && NonResourceURLMatches(r, a.Path)
}

// Covers reports whether the owner's rules allow everything the servant's
// do, and lists (one verb, group, resource and name each) what they do not.
// It is the escalation check: a user may only grant what they hold.
func Covers(owner, servant []PolicyRule) (bool, []PolicyRule) {
	var missing []PolicyRule
	for i := range servant {
		for _, sub := range Breakdown(&servant[i]) {
			covered := false
			for j := range owner {
				if ruleCovers(&owner[j], &sub) {
					covered = true
					break
				}
			}
			if !covered {
				missing = append(missing, sub)
			}
		}
	}
	return len(missing) == 0, missing
}

// Breakdown splits a rule into rules of one verb, API group, resource and
// resource name (or one verb and URL for non-resource rules).
func Breakdown(r *PolicyRule) []PolicyRule {
	var out []PolicyRule
	for _, verb := range r.Verbs {
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				if len(r.ResourceNames) == 0 {
					out = append(out, PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}})
					continue
				}
				for _, name := range r.ResourceNames {
					out = append(out, PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}})
				}
			}
		}
		for _, u := range r.NonResourceURLs {
			out = append(out, PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{u}})
		}
	}
	return out
}

// ruleCovers reports whether owner allows everything sub does.
func ruleCovers(owner, sub *PolicyRule) bool {
	return hasAll(owner.Verbs, sub.Verbs, VerbAll) &&
		hasAll(owner.APIGroups, sub.APIGroups, APIGroupAll) &&
		resourcesCover(owner.Resources, sub.Resources) &&
		nonResourceURLsCover(owner.NonResourceURLs, sub.NonResourceURLs) &&
		namesCover(owner.ResourceNames, sub.ResourceNames)
}

// namesCover: a rule without names covers every name; one with names
// covers only those, and never a rule without names.
func namesCover(owner, sub []string) bool {
	if len(owner) == 0 {
		return true
	}
	return len(sub) > 0 && hasAll(owner, sub, "")
}

// hasAll reports whether set contains every item, or the wildcard.
func hasAll(set, items []string, wildcard string) bool {
	if wildcard != "" && slices.Contains(set, wildcard) {
		return true
	}
	for _, it := range items {
		if !slices.Contains(set, it) {
			return false
		}
	}
	return true
}

func resourcesCover(owner, sub []string) bool {
	if slices.Contains(owner, ResourceAll) {
		return true
	}
	for _, res := range sub {
		if slices.Contains(owner, res) {
			continue
		}
		// "*/status" covers every resource's status.
		if i := strings.Index(res, "/"); i >= 0 && slices.Contains(owner, "*"+res[i:]) {
			continue
		}
		return false
	}
	return true
}

func nonResourceURLsCover(owner, sub []string) bool {
	for _, u := range sub {
		covered := false
		for _, o := range owner {
			if o == u || o == NonResourceAll {
				covered = true
				break
			}
			if prefix, ok := strings.CutSuffix(o, "*"); ok && strings.HasPrefix(u, prefix) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

// CompactRules merges rules that differ only in their verbs (one API group,
// one resource, no names), as kube-apiserver does before it lists what an
// escalation attempt lacks.
func CompactRules(rules []PolicyRule) []PolicyRule {
	type key struct{ group, resource string }
	var out []PolicyRule
	index := map[key]int{}
	for _, r := range rules {
		if len(r.APIGroups) == 1 && len(r.Resources) == 1 && len(r.ResourceNames) == 0 && len(r.NonResourceURLs) == 0 {
			k := key{r.APIGroups[0], r.Resources[0]}
			if i, ok := index[k]; ok {
				for _, v := range r.Verbs {
					if !slices.Contains(out[i].Verbs, v) {
						out[i].Verbs = append(out[i].Verbs, v)
					}
				}
				continue
			}
			index[k] = len(out)
		}
		c := r
		c.Verbs = slices.Clone(r.Verbs)
		out = append(out, c)
	}
	return out
}

// CompactString renders a rule as kube-apiserver does in its messages:
// {APIGroups:["wardle.example.com"], Resources:["flunders"], Verbs:["get"]}.
func CompactString(r PolicyRule) string {
	var parts []string
	add := func(name string, values []string) {
		if len(values) == 0 {
			return
		}
		quoted := make([]string, len(values))
		for i, v := range values {
			quoted[i] = fmt.Sprintf("%q", v)
		}
		parts = append(parts, name+":["+strings.Join(quoted, ", ")+"]")
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("ResourceNames", r.ResourceNames)
	add("NonResourceURLs", r.NonResourceURLs)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
