package authz_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
)

func answer(d authz.Decision, reason string, err error) authz.Authorizer {
	return authz.Func(func(context.Context, authz.Attributes) (authz.Decision, string, error) { return d, reason, err })
}

func TestUnion(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		chain      []authz.Authorizer
		want       authz.Decision
		wantReason string
		wantErr    bool
	}{
		{"first allow wins", []authz.Authorizer{answer(authz.DecisionAllow, "a", nil), authz.AlwaysDeny()}, authz.DecisionAllow, "a", false},
		{"first deny wins", []authz.Authorizer{authz.AlwaysDeny(), authz.AlwaysAllow()}, authz.DecisionDeny, "Everything is forbidden.", false},
		{"no opinion passes on", []authz.Authorizer{answer(authz.DecisionNoOpinion, "r1", nil), authz.AlwaysAllow()}, authz.DecisionAllow, "", false},
		{"errors do not stop a later allow", []authz.Authorizer{answer(authz.DecisionNoOpinion, "", boom), authz.AlwaysAllow()}, authz.DecisionAllow, "", false},
		{"nobody decides: reasons and errors", []authz.Authorizer{answer(authz.DecisionNoOpinion, "r1", boom), answer(authz.DecisionNoOpinion, "r2", nil)},
			authz.DecisionNoOpinion, "r1\nr2", true},
	} {
		d, reason, err := authz.Union(tc.chain...).Authorize(context.Background(), authz.Attributes{})
		if d != tc.want || reason != tc.wantReason || (err != nil) != tc.wantErr {
			t.Errorf("%s: %v %q %v", tc.name, d, reason, err)
		}
	}
}

func TestPrivilegedGroupsAndPaths(t *testing.T) {
	p := authz.PrivilegedGroups(authn.SystemPrivilegedGroup)
	for _, tc := range []struct {
		user *authn.User
		want authz.Decision
	}{
		{&authn.User{Name: "root", Groups: []string{"x", authn.SystemPrivilegedGroup}}, authz.DecisionAllow},
		{&authn.User{Name: "system:masters"}, authz.DecisionNoOpinion}, // a user name is not a group
		{nil, authz.DecisionNoOpinion},
	} {
		if d, _, _ := p.Authorize(context.Background(), authz.Attributes{User: tc.user, Verb: "delete"}); d != tc.want {
			t.Errorf("%v: %v", tc.user, d)
		}
	}
	paths, err := authz.AlwaysAllowPaths("/healthz", "/metrics/*")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]authz.Decision{"/healthz": authz.DecisionAllow, "/healthz/ping": authz.DecisionNoOpinion,
		"/metrics/slis": authz.DecisionAllow, "/metrics": authz.DecisionNoOpinion, "/": authz.DecisionNoOpinion} {
		if d, _, _ := paths.Authorize(context.Background(), authz.Attributes{Verb: "get", Path: path}); d != want {
			t.Errorf("%s: %v, want %v", path, d, want)
		}
	}
	if d, _, _ := paths.Authorize(context.Background(), authz.Attributes{Verb: "get", ResourceRequest: true, Path: "/healthz"}); d != authz.DecisionNoOpinion {
		t.Error("a resource request allowed by path")
	}
	if _, err := authz.AlwaysAllowPaths("/a*b"); err == nil {
		t.Error("a star inside a path accepted")
	}
}

func TestRuleResolvers(t *testing.T) {
	allow := authz.AlwaysAllow().(authz.RuleResolver)
	deny := authz.AlwaysDeny().(authz.RuleResolver)
	r, n, incomplete, err := authz.UnionRuleResolver(allow, deny).RulesFor(context.Background(), &authn.User{Name: "u"}, "ns")
	if len(r) != 1 || len(n) != 1 || incomplete || err != nil || r[0].Verbs[0] != "*" {
		t.Errorf("rules %v %v %v %v", r, n, incomplete, err)
	}
}
