package rbac

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
)

func clusterRole(name string, rules ...PolicyRule) *ClusterRole {
	return &ClusterRole{ObjectMeta: meta.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...PolicyRule) *Role {
	return &Role{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func user(name string) Subject  { return Subject{Kind: UserKind, APIGroup: GroupName, Name: name} }
func group(name string) Subject { return Subject{Kind: GroupKind, APIGroup: GroupName, Name: name} }

func clusterBinding(name, roleName string, subjects ...Subject) *ClusterRoleBinding {
	return &ClusterRoleBinding{ObjectMeta: meta.ObjectMeta{Name: name},
		RoleRef: RoleRef{APIGroup: GroupName, Kind: KindClusterRole, Name: roleName}, Subjects: subjects}
}

func binding(ns, name, kind, roleName string, subjects ...Subject) *RoleBinding {
	return &RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: RoleRef{APIGroup: GroupName, Kind: kind, Name: roleName}, Subjects: subjects}
}

// testIndex is a policy exercising every kind of rule.
func testIndex() *Index {
	x := NewIndex()
	x.PutClusterRole(clusterRole("flunder-reader", Rule("wardle.example.com", []string{"flunders"}, "get", "list", "watch")))
	x.PutClusterRole(clusterRole("status-writer", Rule("*", []string{"*/status"}, "update", "patch")))
	x.PutClusterRole(clusterRole("one-fischer", PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{"wardle.example.com"},
		Resources: []string{"fischers"}, ResourceNames: []string{"fi1"}}))
	x.PutClusterRole(clusterRole("healthz", NonResourceRule([]string{"/healthz", "/apis/*"}, "get")))
	x.PutClusterRole(clusterRole("everything", Rule("*", []string{"*"}, "*"), NonResourceRule([]string{"*"}, "*")))
	x.PutClusterRole(clusterRole("flunder-scale", Rule("wardle.example.com", []string{"flunders/scale"}, "get")))
	x.PutRole(role("team-a", "writer", Rule("wardle.example.com", []string{"flunders"}, "create", "delete"), Rule("", []string{"configmaps"}, "get")))

	x.PutClusterRoleBinding(clusterBinding("readers", "flunder-reader", group("readers")))
	x.PutClusterRoleBinding(clusterBinding("status", "status-writer", user("sam")))
	x.PutClusterRoleBinding(clusterBinding("fischer", "one-fischer", user("fred")))
	x.PutClusterRoleBinding(clusterBinding("health", "healthz", group(authn.AllAuthenticated)))
	x.PutClusterRoleBinding(clusterBinding("root", "everything", user("root")))
	x.PutClusterRoleBinding(clusterBinding("dangling", "no-such-role", user("dora")))
	x.PutClusterRoleBinding(clusterBinding("dangling-group", "no-such-role-either", group("ghosts")))
	x.PutClusterRoleBinding(clusterBinding("dangling-again", "no-such-role", group("ghosts")))
	x.PutRoleBinding(binding("team-a", "alice-writes", KindRole, "writer", user("alice")))
	x.PutRoleBinding(binding("team-a", "alice-scale", KindClusterRole, "flunder-scale", user("alice")))
	x.PutRoleBinding(binding("team-a", "alice-health", KindClusterRole, "healthz", user("alice")))
	x.PutRoleBinding(binding("team-a", "bot", KindRole, "writer", Subject{Kind: ServiceAccountKind, Name: "bot"}))
	x.PutRoleBinding(binding("team-a", "other-bot", KindRole, "writer", Subject{Kind: ServiceAccountKind, Name: "bot", Namespace: "team-b"}))
	x.MarkSynced()
	return x
}

func res(verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func path(verb, p string) authz.Attributes { return authz.Attributes{Verb: verb, Path: p} }

func TestAuthorize(t *testing.T) {
	a := NewAuthorizer(testIndex())
	u := func(name string, groups ...string) *authn.User {
		return &authn.User{Name: name, Groups: append(groups, authn.AllAuthenticated)}
	}
	for _, tc := range []struct {
		name  string
		user  *authn.User
		attrs authz.Attributes
		allow bool
	}{
		// verbs
		{"group member gets", u("gina", "readers"), res("get", "wardle.example.com", "flunders", "", "ns", "f"), true},
		{"group member lists all namespaces", u("gina", "readers"), res("list", "wardle.example.com", "flunders", "", "", ""), true},
		{"verb not in the rule", u("gina", "readers"), res("delete", "wardle.example.com", "flunders", "", "ns", "f"), false},
		{"not a member", u("gina"), res("get", "wardle.example.com", "flunders", "", "ns", "f"), false},
		{"other group", u("gina", "readers"), res("get", "other.example.com", "flunders", "", "ns", "f"), false},
		{"other resource", u("gina", "readers"), res("get", "wardle.example.com", "fischers", "", "", "f"), false},
		// wildcards
		{"star verbs, groups and resources", u("root"), res("escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "x"), true},
		{"star non-resource", u("root"), path("delete", "/anything/at/all"), true},
		// subresources
		{"main resource rule does not cover a subresource", u("gina", "readers"), res("get", "wardle.example.com", "flunders", "status", "ns", "f"), false},
		{"*/status covers every status", u("sam"), res("patch", "wardle.example.com", "flunders", "status", "ns", "f"), true},
		{"*/status is not the object", u("sam"), res("patch", "wardle.example.com", "flunders", "", "ns", "f"), false},
		{"named subresource in a namespace", u("alice"), res("get", "wardle.example.com", "flunders", "scale", "team-a", "f"), true},
		{"named subresource, other subresource", u("alice"), res("get", "wardle.example.com", "flunders", "status", "team-a", "f"), false},
		// resourceNames
		{"named object", u("fred"), res("get", "wardle.example.com", "fischers", "", "", "fi1"), true},
		{"other name", u("fred"), res("get", "wardle.example.com", "fischers", "", "", "fi2"), false},
		{"names do not cover list", u("fred"), res("list", "wardle.example.com", "fischers", "", "", ""), false},
		{"names do not cover create", u("fred"), res("create", "wardle.example.com", "fischers", "", "", ""), false},
		// non-resource URLs
		{"exact URL", u("nora"), path("get", "/healthz"), true},
		{"prefix URL", u("nora"), path("get", "/apis/wardle.example.com"), true},
		{"prefix is not the bare path", u("nora"), path("get", "/apis"), false},
		{"URL verb", u("nora"), path("post", "/healthz"), false},
		{"URL through a RoleBinding does not count", u("alice"), path("get", "/healthz/ping"), false},
		// namespaces
		{"role in its namespace", u("alice"), res("create", "wardle.example.com", "flunders", "", "team-a", ""), true},
		{"core group", u("alice"), res("get", "", "configmaps", "", "team-a", "c"), true},
		{"role in another namespace", u("alice"), res("create", "wardle.example.com", "flunders", "", "team-b", ""), false},
		{"role at the cluster scope", u("alice"), res("create", "wardle.example.com", "flunders", "", "", ""), false},
		// service accounts
		{"service account of the binding's namespace", u("system:serviceaccount:team-a:bot"), res("delete", "wardle.example.com", "flunders", "", "team-a", "f"), true},
		{"service account of the subject's namespace", u("system:serviceaccount:team-b:bot"), res("delete", "wardle.example.com", "flunders", "", "team-a", "f"), true},
		{"other service account", u("system:serviceaccount:team-c:bot"), res("delete", "wardle.example.com", "flunders", "", "team-a", "f"), false},
		// broken bindings
		{"binding of a missing role", u("dora"), res("get", "wardle.example.com", "flunders", "", "ns", "f"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := tc.attrs
			attrs.User = tc.user
			d, reason, err := a.Authorize(context.Background(), attrs)
			if err != nil {
				t.Fatal(err)
			}
			if (d == authz.DecisionAllow) != tc.allow {
				t.Errorf("decision %v (%s), want allow=%v", d, reason, tc.allow)
			}
			if d == authz.DecisionDeny {
				t.Error("RBAC never denies: it has no opinion")
			}
			if d == authz.DecisionAllow && !strings.HasPrefix(reason, "RBAC: allowed by ") {
				t.Errorf("reason %q", reason)
			}
			if d != authz.DecisionAllow && reason != "" && !strings.HasPrefix(reason, "RBAC: ") {
				t.Errorf("reason %q", reason)
			}
		})
	}
}

func TestAuthorizeReasons(t *testing.T) {
	a := NewAuthorizer(testIndex())
	check := func(u *authn.User, attrs authz.Attributes, want string) {
		t.Helper()
		attrs.User = u
		_, reason, _ := a.Authorize(context.Background(), attrs)
		if reason != want {
			t.Errorf("reason\n got: %s\nwant: %s", reason, want)
		}
	}
	check(&authn.User{Name: "alice"}, res("create", "wardle.example.com", "flunders", "", "team-a", ""),
		`RBAC: allowed by RoleBinding "alice-writes/team-a" of Role "writer" to User "alice"`)
	check(&authn.User{Name: "gina", Groups: []string{"readers"}}, res("get", "wardle.example.com", "flunders", "", "", "f"),
		`RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "flunder-reader" to Group "readers"`)
	// Denied with every binding resolved: no reason, as kube-apiserver's
	// RBAC, so `kubectl auth can-i` prints a plain "no".
	check(&authn.User{Name: "alice"}, res("create", "wardle.example.com", "flunders", "", "team-b", ""), "")
	check(&authn.User{Name: "nobody"}, path("get", "/metrics"), "")
	// A binding of a missing role is the reason, in the words of
	// Kubernetes' error aggregate.
	check(&authn.User{Name: "dora"}, res("get", "wardle.example.com", "flunders", "", "", "f"),
		`RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found`)
	check(&authn.User{Name: "dora", Groups: []string{"ghosts"}}, res("get", "wardle.example.com", "flunders", "", "", "f"),
		`RBAC: [clusterrole.rbac.authorization.k8s.io "no-such-role" not found, clusterrole.rbac.authorization.k8s.io "no-such-role-either" not found]`)

	unsynced := NewAuthorizer(NewIndex())
	d, reason, _ := unsynced.Authorize(context.Background(), authz.Attributes{User: &authn.User{Name: "root"}, Verb: "get", Path: "/"})
	if d != authz.DecisionNoOpinion || reason != "RBAC: the policy is not loaded yet" {
		t.Errorf("unsynced: %v %q", d, reason)
	}
	if d, _, _ := a.Authorize(context.Background(), authz.Attributes{Verb: "get", Path: "/healthz"}); d != authz.DecisionNoOpinion {
		t.Errorf("no user: %v", d)
	}
}

func TestIndexUpdates(t *testing.T) {
	x := testIndex()
	a := NewAuthorizer(x)
	alice := &authn.User{Name: "alice"}
	create := res("create", "wardle.example.com", "flunders", "", "team-a", "")
	create.User = alice
	allowed := func() bool { d, _, _ := a.Authorize(context.Background(), create); return d == authz.DecisionAllow }
	if !allowed() {
		t.Fatal("alice cannot create")
	}
	// A binding whose subjects change no longer grants the old ones.
	x.PutRoleBinding(binding("team-a", "alice-writes", KindRole, "writer", user("bob")))
	if allowed() {
		t.Error("the replaced binding still grants alice")
	}
	x.PutRoleBinding(binding("team-a", "alice-writes", KindRole, "writer", user("alice")))
	x.DeleteRole("team-a", "writer")
	if allowed() {
		t.Error("the deleted role still grants")
	}
	x.PutRole(role("team-a", "writer", Rule("wardle.example.com", []string{"flunders"}, "create")))
	x.DeleteRoleBinding("team-a", "alice-writes")
	if allowed() {
		t.Error("the deleted binding still grants")
	}
}

func TestRulesFor(t *testing.T) {
	a := NewAuthorizer(testIndex())
	resource, nonResource, incomplete, err := a.RulesFor(context.Background(), &authn.User{Name: "alice", Groups: []string{authn.AllAuthenticated}}, "team-a")
	if err != nil || incomplete {
		t.Fatalf("err %v incomplete %v", err, incomplete)
	}
	got := fmt.Sprint(resource, nonResource)
	for _, want := range []string{"{[create delete] [wardle.example.com] [flunders] []}", "{[get] [] [configmaps] []}",
		"{[get] [wardle.example.com] [flunders/scale] []}", "{[get] [/healthz /apis/*]}"} {
		if !strings.Contains(got, want) {
			t.Errorf("rules %s lack %s", got, want)
		}
	}
	_, _, _, err = a.RulesFor(context.Background(), &authn.User{Name: "dora"}, "x")
	if err == nil || !strings.Contains(err.Error(), `"no-such-role" not found`) {
		t.Errorf("dora's rules: %v", err)
	}
}

// TestAuthDelegator: system:auth-delegator, bound to a delegated server's
// user, lets it review tokens and access, and nothing else.
func TestAuthDelegator(t *testing.T) {
	x := NewIndex()
	for _, r := range DefaultPolicy().ClusterRoles {
		x.PutClusterRole(&r)
	}
	x.PutClusterRoleBinding(clusterBinding("wardle:system:auth-delegator", "system:auth-delegator", user("wardle")))
	x.MarkSynced()
	a := NewAuthorizer(x)
	u := &authn.User{Name: "wardle", Groups: []string{authn.AllAuthenticated}}
	for _, tc := range []struct {
		attrs authz.Attributes
		want  authz.Decision
	}{
		{res("create", "authentication.k8s.io", "tokenreviews", "", "", ""), authz.DecisionAllow},
		{res("create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), authz.DecisionAllow},
		{res("create", "authorization.k8s.io", "localsubjectaccessreviews", "", "team-a", ""), authz.DecisionNoOpinion},
		{res("list", "authentication.k8s.io", "tokenreviews", "", "", ""), authz.DecisionNoOpinion},
		{res("get", "wardle.example.com", "flunders", "", "team-a", ""), authz.DecisionNoOpinion},
	} {
		tc.attrs.User = u
		if got, reason, _ := a.Authorize(context.Background(), tc.attrs); got != tc.want {
			t.Errorf("%s %s.%s: %v (%s), want %v", tc.attrs.Verb, tc.attrs.Resource, tc.attrs.APIGroup, got, reason, tc.want)
		}
	}
}
