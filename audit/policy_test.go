package audit_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/audit"
)

const policyYAML = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:kube-proxy"]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz", "/livez"]
- level: RequestResponse
  resources:
  - group: rbac.authorization.k8s.io
    resources: ["rolebindings", "clusterrolebindings"]
- level: Request
  verbs: ["create", "update", "patch"]
  resources:
  - group: wardle.example.com
    resources: ["flunders/*"]
  namespaces: ["prod"]
- level: Metadata
  resources:
  - group: wardle.example.com
    resources: ["fischers"]
    resourceNames: ["ban-list"]
  omitStages: ["ResponseStarted"]
- level: None
  userGroups: ["system:nodes"]
  resources:
  - group: wardle.example.com
    resources: ["*/status"]
- level: Metadata
`

func TestPolicyLevels(t *testing.T) {
	p, err := audit.ParsePolicy([]byte(policyYAML))
	if err != nil {
		t.Fatal(err)
	}
	res := func(verb, group, resource, sub, ns, name string) audit.Attributes {
		return audit.Attributes{User: "alice", Groups: []string{"dev"}, Verb: verb, IsResourceRequest: true,
			APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		name  string
		attrs audit.Attributes
		level string
		omit  []string
	}{
		{"a user left out", audit.Attributes{User: "system:kube-proxy", Verb: "list", IsResourceRequest: true, Resource: "flunders"}, audit.LevelNone, []string{"RequestReceived"}},
		{"health, by prefix", audit.Attributes{User: "alice", Verb: "get", Path: "/healthz/ping"}, audit.LevelNone, []string{"RequestReceived"}},
		{"readyz exactly", audit.Attributes{User: "alice", Verb: "get", Path: "/readyz"}, audit.LevelNone, []string{"RequestReceived"}},
		{"a resource is not a non-resource URL", res("get", "", "healthz", "", "", ""), audit.LevelMetadata, []string{"RequestReceived"}},
		{"bindings in full", res("create", "rbac.authorization.k8s.io", "rolebindings", "", "ns", "rb"), audit.LevelRequestResponse, []string{"RequestReceived"}},
		{"res/* matches res", res("create", "wardle.example.com", "flunders", "", "prod", "f"), audit.LevelRequest, []string{"RequestReceived"}},
		{"res/* matches its subresources", res("update", "wardle.example.com", "flunders", "status", "prod", "f"), audit.LevelRequest, []string{"RequestReceived"}},
		{"another namespace", res("create", "wardle.example.com", "flunders", "", "dev", "f"), audit.LevelMetadata, []string{"RequestReceived"}},
		{"another verb", res("get", "wardle.example.com", "flunders", "", "prod", "f"), audit.LevelMetadata, []string{"RequestReceived"}},
		{"a named resource", res("get", "wardle.example.com", "fischers", "", "", "ban-list"), audit.LevelMetadata, []string{"RequestReceived", "ResponseStarted"}},
		{"another name", res("get", "wardle.example.com", "fischers", "", "", "other"), audit.LevelMetadata, []string{"RequestReceived"}},
		{"*/status for a group", audit.Attributes{User: "n", Groups: []string{"system:nodes"}, Verb: "update", IsResourceRequest: true,
			APIGroup: "wardle.example.com", Resource: "flunders", Subresource: "status", Namespace: "x"}, audit.LevelNone, []string{"RequestReceived"}},
		{"*/status is not the resource", audit.Attributes{User: "n", Groups: []string{"system:nodes"}, Verb: "update", IsResourceRequest: true,
			APIGroup: "wardle.example.com", Resource: "flunders", Namespace: "x"}, audit.LevelMetadata, []string{"RequestReceived"}},
	} {
		level, omit := p.LevelOf(tc.attrs)
		if level != tc.level || !slices.Equal(omit, tc.omit) {
			t.Errorf("%s: %s %v, want %s %v", tc.name, level, omit, tc.level, tc.omit)
		}
	}

	none, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  users: [bob]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if level, _ := none.LevelOf(audit.Attributes{User: "alice", Verb: "get"}); level != audit.LevelNone {
		t.Errorf("no rule matches: %s, want None", level)
	}
}

func TestParsePolicyRejects(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"apiVersion: v1\nkind: ConfigMap\nrules: [{level: None}]", "want audit.k8s.io/v1 Policy"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []", "has no rules"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]", `rules[0].level: "Everything" is not one of`},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, verb: [get]}]", `unknown field "verb"`},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/x], namespaces: [a]}]", "both regular resources and non-resource URLs"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [healthz]}]", "must start with /"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/a*b]}]", "only at its end"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, resources: [{resources: ['*'], resourceNames: [x]}]}]", "resourceNames cannot go with a wildcard"},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Done]\nrules: [{level: None}]", `omitStages: "Done" is not a stage`},
		{"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, omitStages: [Later]}]", `rules[0].omitStages: "Later" is not a stage`},
		{"{", "reading the audit policy"},
	} {
		_, err := audit.ParsePolicy([]byte(tc.policy))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePolicy(%q) = %v, want an error with %q", tc.policy, err, tc.want)
		}
	}
}

// FuzzParsePolicy: a policy file is operator input; whatever it holds,
// parsing fails cleanly or yields a policy that answers for any request.
func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(policyYAML))
	f.Add([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := audit.ParsePolicy(data)
		if err != nil {
			return
		}
		level, _ := p.LevelOf(audit.Attributes{User: "u", Verb: "get", IsResourceRequest: true, Resource: "flunders", Subresource: "status"})
		if !slices.Contains([]string{audit.LevelNone, audit.LevelMetadata, audit.LevelRequest, audit.LevelRequestResponse}, level) {
			t.Fatalf("level %q", level)
		}
	})
}
