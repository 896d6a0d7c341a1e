package rbac

import (
	"slices"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

func TestCovers(t *testing.T) {
	named := func(verb, group, resource string, names ...string) PolicyRule {
		return PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: names}
	}
	for _, tc := range []struct {
		name           string
		owner, servant []PolicyRule
		covers         bool
		missing        []string
	}{
		{"same rule", []PolicyRule{Rule("g", []string{"r"}, "get", "list")}, []PolicyRule{Rule("g", []string{"r"}, "get")}, true, nil},
		{"more verbs", []PolicyRule{Rule("g", []string{"r"}, "get")}, []PolicyRule{Rule("g", []string{"r"}, "get", "delete")}, false,
			[]string{`{APIGroups:["g"], Resources:["r"], Verbs:["delete"]}`}},
		{"star verb", []PolicyRule{Rule("g", []string{"r"}, "*")}, []PolicyRule{Rule("g", []string{"r"}, "escalate")}, true, nil},
		{"star group and resource", []PolicyRule{Rule("*", []string{"*"}, "get")}, []PolicyRule{Rule("x", []string{"y", "z/status"}, "get")}, true, nil},
		{"a star cannot be granted by a list", []PolicyRule{Rule("g", []string{"r"}, "get")}, []PolicyRule{Rule("*", []string{"r"}, "get")}, false,
			[]string{`{APIGroups:["*"], Resources:["r"], Verbs:["get"]}`}},
		{"*/status covers r/status", []PolicyRule{Rule("g", []string{"*/status"}, "update")}, []PolicyRule{Rule("g", []string{"r/status"}, "update")}, true, nil},
		{"*/status does not cover r", []PolicyRule{Rule("g", []string{"*/status"}, "update")}, []PolicyRule{Rule("g", []string{"r"}, "update")}, false,
			[]string{`{APIGroups:["g"], Resources:["r"], Verbs:["update"]}`}},
		{"names covered by no names", []PolicyRule{Rule("g", []string{"r"}, "get")}, []PolicyRule{named("get", "g", "r", "a")}, true, nil},
		{"names covered by the same names", []PolicyRule{named("get", "g", "r", "a", "b")}, []PolicyRule{named("get", "g", "r", "b")}, true, nil},
		{"other names", []PolicyRule{named("get", "g", "r", "a")}, []PolicyRule{named("get", "g", "r", "c")}, false,
			[]string{`{APIGroups:["g"], Resources:["r"], ResourceNames:["c"], Verbs:["get"]}`}},
		{"names do not cover all", []PolicyRule{named("get", "g", "r", "a")}, []PolicyRule{Rule("g", []string{"r"}, "get")}, false,
			[]string{`{APIGroups:["g"], Resources:["r"], Verbs:["get"]}`}},
		{"URL prefix", []PolicyRule{NonResourceRule([]string{"/apis/*"}, "get")}, []PolicyRule{NonResourceRule([]string{"/apis/g/v"}, "get")}, true, nil},
		{"URL outside the prefix", []PolicyRule{NonResourceRule([]string{"/apis/*"}, "get")}, []PolicyRule{NonResourceRule([]string{"/metrics"}, "get")}, false,
			[]string{`{NonResourceURLs:["/metrics"], Verbs:["get"]}`}},
		{"resource rules do not cover URLs", []PolicyRule{Rule("*", []string{"*"}, "*")}, []PolicyRule{NonResourceRule([]string{"/healthz"}, "get")}, false,
			[]string{`{NonResourceURLs:["/healthz"], Verbs:["get"]}`}},
		{"compacted verbs", nil, []PolicyRule{Rule("g", []string{"r"}, "get", "list")}, false,
			[]string{`{APIGroups:["g"], Resources:["r"], Verbs:["get", "list"]}`}},
		{"nothing to cover", nil, nil, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, missing := Covers(tc.owner, tc.servant)
			if ok != tc.covers {
				t.Errorf("covers %v, want %v", ok, tc.covers)
			}
			var got []string
			for _, r := range CompactRules(missing) {
				got = append(got, CompactString(r))
			}
			if !slices.Equal(got, tc.missing) {
				t.Errorf("missing %q, want %q", got, tc.missing)
			}
		})
	}
}

func TestAggregatedRules(t *testing.T) {
	labelled := func(name string, labels map[string]string, rules ...PolicyRule) *ClusterRole {
		r := clusterRole(name, rules...)
		r.Labels = labels
		return r
	}
	read := Rule("g", []string{"r"}, "get")
	write := Rule("g", []string{"r"}, "update")
	other := Rule("h", []string{"s"}, "list")
	agg := &ClusterRole{ObjectMeta: meta.ObjectMeta{Name: "agg", Labels: map[string]string{"x": "true"}},
		Rules:           []PolicyRule{Rule("stale", []string{"stale"}, "get")},
		AggregationRule: &AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{{MatchLabels: map[string]string{"x": "true"}}, {MatchLabels: map[string]string{"y": "true"}}}}}
	all := []*ClusterRole{
		labelled("b-writer", map[string]string{"x": "true"}, write, read),
		labelled("a-reader", map[string]string{"x": "true"}, read),
		labelled("c-other", map[string]string{"y": "true"}, other, read),
		labelled("unlabelled", nil, Rule("no", []string{"no"}, "no")),
		agg, // matches its own selector, and is skipped
	}
	rules, ok := AggregatedRules(agg, all)
	if !ok {
		t.Fatal("not aggregated")
	}
	// Selectors in order, roles by name, each rule once.
	if want := []PolicyRule{read, write, other}; !semanticRulesEqual(rules, want) {
		t.Errorf("rules %v, want %v", rules, want)
	}
	if _, ok := AggregatedRules(clusterRole("plain"), all); ok {
		t.Error("a role without an aggregation rule is aggregated")
	}
	empty := &ClusterRole{ObjectMeta: meta.ObjectMeta{Name: "e"}, AggregationRule: &AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{{MatchLabels: map[string]string{"none": "true"}}}}}
	if rules, _ := AggregatedRules(empty, all); rules == nil || len(rules) != 0 {
		t.Errorf("no match: %v", rules)
	}
}

func TestValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		errs meta.FieldErrors
		want []string
	}{
		{"rule without verbs", validateRules([]PolicyRule{{APIGroups: []string{""}, Resources: []string{"r"}}}, true),
			[]string{"rules[0].verbs: Required value"}},
		{"URL in a Role", validateRules([]PolicyRule{NonResourceRule([]string{"/x"}, "get")}, true),
			[]string{`rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`}},
		{"URL and resources", validateRules([]PolicyRule{{Verbs: []string{"get"}, Resources: []string{"r"}, NonResourceURLs: []string{"/x"}}}, false),
			[]string{`rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs`}},
		{"resources without groups", validateRules([]PolicyRule{{Verbs: []string{"get"}, Resources: []string{"r"}}}, false),
			[]string{"rules[0].apiGroups: Required value: resource rules must supply at least one api group"}},
		{"ClusterRoleBinding of a Role", validateBinding(RoleRef{APIGroup: GroupName, Kind: KindRole, Name: "r"}, nil, true),
			[]string{`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`}},
		{"bad subjects", validateBinding(RoleRef{APIGroup: GroupName, Kind: KindClusterRole, Name: "r"},
			[]Subject{{Kind: "Robot", Name: "r2"}, {Kind: ServiceAccountKind, Name: "sa"}, {Kind: UserKind, Name: "u"}}, true),
			[]string{`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
				"subjects[1].namespace: Required value", `subjects[2].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`}},
		{"empty aggregation", validateAggregationRule(&AggregationRule{}),
			[]string{"aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"}},
	} {
		var got []string
		for _, e := range tc.errs {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestValidateName: RBAC names are any path segment, and kube-apiserver's
// ValidateRBACName judges a generateName prefix as it judges a name.
func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix bool
		want   []string
	}{
		{"system:discovery", false, nil},
		{"system:", true, nil},
		{"a/b", false, []string{"may not contain '/'"}},
		{"a%b", true, []string{"may not contain '%'"}},
		{"..", false, []string{"may not be '..'"}},
		{".", true, []string{"may not be '.'"}},
	} {
		if got := ValidateName(tc.name, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("ValidateName(%q, %t) = %q, want %q", tc.name, tc.prefix, got, tc.want)
		}
	}
}
