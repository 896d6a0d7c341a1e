package rbac

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

// policyServer is the RBAC part of a server on memory storage: stores,
// an index synced from them, and the served resources with the server's
// authorizer (system:masters, then RBAC).
type policyServer struct {
	stores     *Stores
	index      *Index
	authorizer authz.Authorizer
	resources  map[string]registry.Resource
}

func newPolicyServer(t *testing.T) *policyServer {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	stores, err := NewStores(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	index := NewIndex()
	rbac := NewAuthorizer(index)
	a := authz.Union(authz.PrivilegedGroups(authn.SystemPrivilegedGroup), rbac)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	t.Cleanup(func() { cancel(); <-done; <-done })
	if err := Reconcile(ctx, stores, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	go func() { Sync(ctx, stores, index, nil); done <- struct{}{} }()
	go func() { Aggregate(ctx, stores.ClusterRoles, index, nil); done <- struct{}{} }()
	select {
	case <-index.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced")
	}
	p := &policyServer{stores: stores, index: index, authorizer: a, resources: map[string]registry.Resource{}}
	for _, r := range stores.Resources(a, rbac) {
		p.resources[r.Info().Resource] = r
	}
	return p
}

var admin = &authn.User{Name: "admin", Groups: []string{authn.SystemPrivilegedGroup, authn.AllAuthenticated}}

func as(u *authn.User) context.Context { return authn.WithUser(context.Background(), u) }

func (p *policyServer) create(t *testing.T, u *authn.User, resource, ns string, obj meta.Object) error {
	t.Helper()
	_, err := p.resources[resource].Create(as(u), ns, obj, registry.WriteOptions{})
	return err
}

// can waits (up to a second) until u may, or may not, do attrs.
func (p *policyServer) waitCan(t *testing.T, u *authn.User, attrs authz.Attributes, want bool) {
	t.Helper()
	attrs.User = u
	deadline := time.Now().Add(time.Second)
	for {
		d, _, _ := p.authorizer.Authorize(context.Background(), attrs)
		if (d == authz.DecisionAllow) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s/%s in %q: allowed %v after a second, want %v", u.Name, attrs.Verb, attrs.Resource, attrs.Namespace, !want, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEscalationPrevented(t *testing.T) {
	p := newPolicyServer(t)
	alice := &authn.User{Name: "alice", Groups: []string{authn.AllAuthenticated}}
	// alice may manage roles and bindings in team-a and read flunders there.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.create(t, admin, "roles", "team-a", role("team-a", "manager",
		Rule(GroupName, []string{"roles", "rolebindings"}, "create", "update", "get"),
		Rule("wardle.example.com", []string{"flunders"}, "get", "list"))))
	must(p.create(t, admin, "rolebindings", "team-a", binding("team-a", "alice-manages", KindRole, "manager", user("alice"))))
	p.waitCan(t, alice, res("create", GroupName, "roles", "", "team-a", ""), true)

	forbidden := func(err error, want string) {
		t.Helper()
		if !meta.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want Forbidden with %q", err, want)
		}
	}
	// A role with rules she holds: fine. One with more: refused.
	must(p.create(t, alice, "roles", "team-a", role("", "reader", Rule("wardle.example.com", []string{"flunders"}, "get"))))
	err := p.create(t, alice, "roles", "team-a", role("", "deleter", Rule("wardle.example.com", []string{"flunders"}, "get", "delete")))
	forbidden(err, `roles.rbac.authorization.k8s.io "deleter" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`+
		"\n"+`{APIGroups:["wardle.example.com"], Resources:["flunders"], Verbs:["delete"]}`)
	// Rules she holds in team-a, not in team-b.
	err = p.create(t, alice, "roles", "team-b", role("", "reader", Rule("wardle.example.com", []string{"flunders"}, "get")))
	if !meta.IsForbidden(err) {
		t.Errorf("role in team-b: %v", err)
	}
	// An update that widens a role is an escalation too.
	_, _, err = p.resources["roles"].Update(as(alice), "team-a", "reader", func(_ context.Context, cur meta.Object) (meta.Object, error) {
		r := cur.(*Role)
		r.Rules = append(r.Rules, Rule("wardle.example.com", []string{"flunders"}, "delete"))
		return r, nil
	}, registry.UpdateOptions{})
	forbidden(err, "is attempting to grant RBAC permissions not currently held")
	// ...but changing a label is not.
	_, _, err = p.resources["roles"].Update(as(alice), "team-a", "reader", func(_ context.Context, cur meta.Object) (meta.Object, error) {
		r := cur.(*Role)
		r.Labels = map[string]string{"team": "a"}
		return r, nil
	}, registry.UpdateOptions{})
	must(err)

	// Bindings: a role whose rules she holds, yes; admin, no.
	must(p.create(t, alice, "rolebindings", "team-a", binding("", "bob-reads", KindRole, "reader", user("bob"))))
	err = p.create(t, alice, "rolebindings", "team-a", binding("", "bob-admin", KindClusterRole, "cluster-admin", user("bob")))
	forbidden(err, `rolebindings.rbac.authorization.k8s.io "bob-admin" is forbidden: user "alice"`)
	err = p.create(t, alice, "rolebindings", "team-a", binding("", "ghost", KindRole, "no-such-role", user("bob")))
	if !meta.IsNotFound(err) {
		t.Errorf("binding a missing role: %v", err)
	}

	// "bind" on cluster-admin lets her bind it without holding it;
	// "escalate" on roles lets her write any role.
	must(p.create(t, admin, "roles", "team-a", role("team-a", "delegate",
		PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}},
		Rule(GroupName, []string{"roles"}, "escalate"))))
	must(p.create(t, admin, "rolebindings", "team-a", binding("team-a", "alice-delegates", KindRole, "delegate", user("alice"))))
	p.waitCan(t, alice, res("escalate", GroupName, "roles", "", "team-a", ""), true)
	must(p.create(t, alice, "rolebindings", "team-a", binding("", "bob-admin", KindClusterRole, "cluster-admin", user("bob"))))
	must(p.create(t, alice, "roles", "team-a", role("", "deleter", Rule("wardle.example.com", []string{"flunders"}, "get", "delete"))))

	// Cluster roles: only with rules held cluster-wide; aggregation needs
	// everything.
	err = p.create(t, alice, "clusterroles", "", clusterRole("reader", Rule("wardle.example.com", []string{"flunders"}, "get")))
	forbidden(err, `clusterroles.rbac.authorization.k8s.io "reader" is forbidden`)
	must(p.create(t, admin, "clusterroles", "", clusterRole("cr-writer", Rule(GroupName, []string{"clusterroles"}, "create"),
		Rule("wardle.example.com", []string{"flunders"}, "get"))))
	must(p.create(t, admin, "clusterrolebindings", "", clusterBinding("alice-cr", "cr-writer", user("alice"))))
	p.waitCan(t, alice, res("create", GroupName, "clusterroles", "", "", ""), true)
	must(p.create(t, alice, "clusterroles", "", clusterRole("reader", Rule("wardle.example.com", []string{"flunders"}, "get"))))
	aggregating := clusterRole("gatherer")
	aggregating.AggregationRule = &AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}
	forbidden(p.create(t, alice, "clusterroles", "", aggregating), "must have cluster-admin privileges to use the aggregationRule")
	must(p.create(t, admin, "clusterroles", "", aggregating))

	// No user, no write.
	if _, err := p.resources["roles"].Create(context.Background(), "team-a", role("", "x"), registry.WriteOptions{}); !meta.IsForbidden(err) {
		t.Errorf("no user: %v", err)
	}
}

// TestUpdatesCheckTheWholeObject: as kube-apiserver's ConfirmNoEscalation,
// every update of a role or binding is checked against the writer's rules,
// whatever it changes, except one that changes only what garbage
// collection writes. Otherwise a user who may only patch clusterroles
// would label cluster-admin aggregate-to-view and have the aggregation
// copy everything into view.
func TestUpdatesCheckTheWholeObject(t *testing.T) {
	p := newPolicyServer(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// mallory may read and change every role and binding, nothing more.
	must(p.create(t, admin, "clusterroles", "", clusterRole("rbac-patcher",
		Rule(GroupName, []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"}, "get", "update", "patch"))))
	must(p.create(t, admin, "clusterrolebindings", "", clusterBinding("mallory-patches", "rbac-patcher", user("mallory"))))
	must(p.create(t, admin, "roles", "team-a", role("team-a", "secret-reader", Rule("", []string{"secrets"}, "get"))))
	must(p.create(t, admin, "roles", "team-a", role("team-a", "role-reader", Rule(GroupName, []string{"roles"}, "get"))))
	gatherer := clusterRole("gatherer")
	gatherer.AggregationRule = &AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{{MatchLabels: map[string]string{"gather": "me"}}}}
	must(p.create(t, admin, "clusterroles", "", gatherer))
	mallory := &authn.User{Name: "mallory", Groups: []string{authn.AllAuthenticated}}
	p.waitCan(t, mallory, res("patch", GroupName, "clusterroles", "", "", "cluster-admin"), true)

	label := func(k, v string) func(m *meta.ObjectMeta) {
		return func(m *meta.ObjectMeta) { m.Labels = map[string]string{k: v} }
	}
	finalizer := func(m *meta.ObjectMeta) { m.Finalizers = append(m.Finalizers, "example.com/keep") }
	owner := func(m *meta.ObjectMeta) {
		m.OwnerReferences = append(m.OwnerReferences, meta.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "0000-1111"})
	}
	const notHeld = "is attempting to grant RBAC permissions not currently held"
	const aggregation = "must have cluster-admin privileges to use the aggregationRule"
	for _, tc := range []struct {
		name, resource, ns, object string
		change                     func(obj meta.Object)
		forbidden                  string // "" when the update is allowed
	}{
		{"relabelling cluster-admin to aggregate into view", "clusterroles", "", "cluster-admin",
			func(o meta.Object) { label("rbac.authorization.k8s.io/aggregate-to-view", "true")(o.GetObjectMeta()) }, notHeld},
		{"annotating a role she does not hold", "roles", "team-a", "secret-reader",
			func(o meta.Object) { o.GetObjectMeta().Annotations = map[string]string{"a": "b"} }, notHeld},
		{"labelling a role she holds", "roles", "team-a", "role-reader",
			func(o meta.Object) { label("team", "a")(o.GetObjectMeta()) }, ""},
		{"labelling an aggregating role", "clusterroles", "", "gatherer",
			func(o meta.Object) { label("team", "a")(o.GetObjectMeta()) }, aggregation},
		{"removing an aggregation rule", "clusterroles", "", "gatherer",
			func(o meta.Object) { o.(*ClusterRole).AggregationRule = nil }, aggregation},
		{"labelling a binding of a role she does not hold", "clusterrolebindings", "", "cluster-admin",
			func(o meta.Object) { label("team", "a")(o.GetObjectMeta()) }, notHeld},
		{"a finalizer on cluster-admin", "clusterroles", "", "cluster-admin",
			func(o meta.Object) { finalizer(o.GetObjectMeta()) }, ""},
		{"an owner of cluster-admin", "clusterroles", "", "cluster-admin",
			func(o meta.Object) { owner(o.GetObjectMeta()) }, ""},
		{"a finalizer on an aggregating role", "clusterroles", "", "gatherer",
			func(o meta.Object) { finalizer(o.GetObjectMeta()) }, ""},
		{"a finalizer and an owner of a binding", "clusterrolebindings", "", "cluster-admin",
			func(o meta.Object) { finalizer(o.GetObjectMeta()); owner(o.GetObjectMeta()) }, ""},
		{"a finalizer and a label", "roles", "team-a", "secret-reader",
			func(o meta.Object) { finalizer(o.GetObjectMeta()); label("x", "y")(o.GetObjectMeta()) }, notHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := p.resources[tc.resource].Update(as(mallory), tc.ns, tc.object, func(_ context.Context, cur meta.Object) (meta.Object, error) {
				tc.change(cur)
				return cur, nil
			}, registry.UpdateOptions{})
			switch {
			case tc.forbidden == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.forbidden != "" && (!meta.IsForbidden(err) || !strings.Contains(err.Error(), tc.forbidden)):
				t.Errorf("got %v, want Forbidden with %q", err, tc.forbidden)
			}
		})
	}
}

func TestSyncAndAggregation(t *testing.T) {
	p := newPolicyServer(t)
	bob := &authn.User{Name: "bob", Groups: []string{authn.AllAuthenticated}}
	list := res("list", "wardle.example.com", "flunders", "", "ns", "")
	// view aggregates ClusterRoles labelled aggregate-to-view.
	labelled := clusterRole("flunder-view", Rule("wardle.example.com", []string{"flunders"}, "get", "list"))
	labelled.Labels = map[string]string{AggregateToView: "true"}
	if err := p.create(t, admin, "clusterroles", "", labelled); err != nil {
		t.Fatal(err)
	}
	if err := p.create(t, admin, "rolebindings", "ns", binding("", "bob-views", KindClusterRole, "view", user("bob"))); err != nil {
		t.Fatal(err)
	}
	p.waitCan(t, bob, list, true)
	// admin aggregates edit, which aggregates view.
	deadline := time.Now().Add(5 * time.Second)
	for {
		admin, _ := p.index.ClusterRole("admin")
		if ok, _ := Covers(admin.Rules, labelled.Rules); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin did not aggregate view's rules: %v", admin.Rules)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Removing the label takes the rules out of view.
	if _, _, err := p.resources["clusterroles"].Update(as(admin), "", "flunder-view", func(_ context.Context, cur meta.Object) (meta.Object, error) {
		r := cur.(*ClusterRole)
		r.Labels = nil
		return r, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitCan(t, bob, list, false)
	// Deleting the binding revokes.
	if _, _, err := p.resources["clusterroles"].Update(as(admin), "", "flunder-view", func(_ context.Context, cur meta.Object) (meta.Object, error) {
		r := cur.(*ClusterRole)
		r.Labels = map[string]string{AggregateToView: "true"}
		return r, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitCan(t, bob, list, true)
	if _, _, err := p.resources["rolebindings"].Delete(as(admin), "ns", "bob-views", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitCan(t, bob, list, false)
}

func TestReconcileKeepsUserChanges(t *testing.T) {
	p := newPolicyServer(t)
	ctx := context.Background()
	crs := p.stores.ClusterRoles
	update := func(name string, fn func(*ClusterRole)) {
		t.Helper()
		if _, _, err := crs.Update(ctx, "", name, func(_ context.Context, cur *ClusterRole) (*ClusterRole, error) {
			fn(cur)
			return cur, nil
		}, registry.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	extra := Rule("wardle.example.com", []string{"flunders"}, "get")
	// A user adds a rule to system:discovery, removes system:basic-user's
	// rules, and opts system:public-info-viewer out of updates.
	update("system:discovery", func(r *ClusterRole) { r.Rules = append(r.Rules, extra) })
	update("system:basic-user", func(r *ClusterRole) { r.Rules = nil; r.Labels["mine"] = "yes" })
	update("system:public-info-viewer", func(r *ClusterRole) { r.Rules = nil; r.Annotations[AutoUpdateAnnotation] = "false" })
	if _, _, err := p.stores.ClusterRoleBindings.Update(ctx, "", "cluster-admin", func(_ context.Context, cur *ClusterRoleBinding) (*ClusterRoleBinding, error) {
		cur.Subjects = append(cur.Subjects, user("root"))
		return cur, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.stores.ClusterRoleBindings.Delete(ctx, "", "system:discovery", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _, _ := crs.Get(ctx, "", "cluster-admin", meta.GetOptions{})

	if err := Reconcile(ctx, p.stores, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *ClusterRole {
		r, _, err := crs.Get(ctx, "", name, meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := get("system:discovery"); !slices.ContainsFunc(r.Rules, func(x PolicyRule) bool { return ruleEqual(x, extra) }) {
		t.Errorf("the added rule is gone: %v", r.Rules)
	}
	if r := get("system:basic-user"); len(r.Rules) != 2 || r.Labels["mine"] != "yes" {
		t.Errorf("basic-user not restored, or its label lost: %v %v", r.Rules, r.Labels)
	}
	if r := get("system:public-info-viewer"); len(r.Rules) != 0 {
		t.Errorf("autoupdate=false was overridden: %v", r.Rules)
	}
	if after := get("cluster-admin"); after.ResourceVersion != before.ResourceVersion {
		t.Error("an unchanged role was written")
	}
	b, _, err := p.stores.ClusterRoleBindings.Get(ctx, "", "cluster-admin", meta.GetOptions{})
	if err != nil || !slices.Contains(b.Subjects, user("root")) || !slices.Contains(b.Subjects, group(authn.SystemPrivilegedGroup)) {
		t.Errorf("cluster-admin binding: %v %v", b, err)
	}
	if _, _, err := p.stores.ClusterRoleBindings.Get(ctx, "", "system:discovery", meta.GetOptions{}); err != nil {
		t.Errorf("deleted binding not recreated: %v", err)
	}

	// A binding whose roleRef changed is recreated.
	if _, _, err := p.stores.ClusterRoleBindings.Delete(ctx, "", "system:basic-user", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wrong := clusterBinding("system:basic-user", "view", group(authn.AllAuthenticated))
	if _, err := p.stores.ClusterRoleBindings.Create(ctx, "", wrong, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Reconcile(ctx, p.stores, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if b, _, err := p.stores.ClusterRoleBindings.Get(ctx, "", "system:basic-user", meta.GetOptions{}); err != nil || b.RoleRef.Name != "system:basic-user" {
		t.Errorf("roleRef not restored: %v %v", b, err)
	}
}

// pb builds protobuf messages for the tests.
type pb []byte

func (b pb) str(n protowire.Number, v string) pb {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func (b pb) msg(n protowire.Number, m pb) pb {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

// envelope wraps an object as Kubernetes does: magic, runtime.Unknown.
func envelope(apiVersion, kind string, obj pb) []byte {
	unknown := pb(nil).msg(1, pb(nil).str(1, apiVersion).str(2, kind)).msg(2, obj)
	return append([]byte("k8s\x00"), unknown...)
}

func TestProtobufToJSON(t *testing.T) {
	// What kubectl create rolebinding rb --clusterrole=view --user=alice
	// -n ns posts.
	objectMeta := pb(nil).str(1, "rb").str(3, "ns").msg(11, pb(nil).str(1, "team").str(2, "a"))
	rb := pb(nil).msg(1, objectMeta).
		msg(2, pb(nil).str(1, "User").str(2, GroupName).str(3, "alice")).
		msg(3, pb(nil).str(1, GroupName).str(2, "ClusterRole").str(3, "view"))
	body := envelope("rbac.authorization.k8s.io/v1", "RoleBinding", rb)
	got, err := ProtobufToJSON(body, KindRoleBinding)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"RoleBinding"`, `"name":"rb"`, `"namespace":"ns"`, `"labels":{"team":"a"}`,
		`"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"}]`,
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	// A ClusterRole with a rule and an aggregation rule.
	cr := pb(nil).msg(1, pb(nil).str(1, "cr")).
		msg(2, pb(nil).str(1, "get").str(1, "list").str(2, "wardle.example.com").str(3, "flunders").str(4, "f1")).
		msg(3, pb(nil).msg(1, pb(nil).msg(1, pb(nil).str(1, "x").str(2, "true"))))
	got, err = ProtobufToJSON(envelope("rbac.authorization.k8s.io/v1", "ClusterRole", cr), KindClusterRole)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rules":[{"verbs":["get","list"],"apiGroups":["wardle.example.com"],"resources":["flunders"],"resourceNames":["f1"]}]`,
		`"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"x":"true"}}]}`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	if _, err := ProtobufToJSON(body, KindRole); err == nil {
		t.Error("a RoleBinding decoded as a Role")
	}
	if _, err := ProtobufToJSON([]byte(`{"kind":"Role"}`), KindRole); err == nil {
		t.Error("JSON decoded as protobuf")
	}
	if _, err := ProtobufToJSON(append([]byte("k8s\x00"), 0x0a, 0x7f), KindRole); err == nil {
		t.Error("a truncated message decoded")
	}
}

// FuzzProtobufToJSON: kubectl create role/rolebinding posts protobuf,
// client input. Whatever the body, the decoder fails cleanly or yields a
// JSON object of the kind asked for.
//
//	go test ./authz/rbac -run - -fuzz FuzzProtobufToJSON -fuzztime 30s
func FuzzProtobufToJSON(f *testing.F) {
	objectMeta := pb(nil).str(1, "rb").str(3, "ns").msg(11, pb(nil).str(1, "team").str(2, "a"))
	rb := pb(nil).msg(1, objectMeta).
		msg(2, pb(nil).str(1, "User").str(2, GroupName).str(3, "alice")).
		msg(3, pb(nil).str(1, GroupName).str(2, "ClusterRole").str(3, "view"))
	f.Add(envelope("rbac.authorization.k8s.io/v1", "RoleBinding", rb), KindRoleBinding)
	cr := pb(nil).msg(1, pb(nil).str(1, "cr")).
		msg(2, pb(nil).str(1, "get").str(2, "wardle.example.com").str(3, "flunders")).
		msg(3, pb(nil).msg(1, pb(nil).msg(1, pb(nil).str(1, "x").str(2, "true"))))
	f.Add(envelope("rbac.authorization.k8s.io/v1", "ClusterRole", cr), KindClusterRole)
	f.Add(envelope("rbac.authorization.k8s.io/v1", "Role", pb(nil).msg(2, pb(nil).str(5, "/healthz"))), KindRole)
	f.Fuzz(func(t *testing.T, body []byte, kind string) {
		out, err := ProtobufToJSON(body, kind)
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("ProtobufToJSON(%x) = %s: not a JSON object: %v", body, out, err)
		}
		if m["kind"] != kind {
			t.Fatalf("ProtobufToJSON(%x, %q) = kind %v", body, kind, m["kind"])
		}
	})
}

// TestBindingDefaults: as kube-apiserver's rbac/v1 defaults, a binding may
// leave out the apiGroup of its roleRef and of its User and Group
// subjects (a ServiceAccount's stays empty).
func TestBindingDefaults(t *testing.T) {
	p := newPolicyServer(t)
	subjects := []Subject{{Kind: UserKind, Name: "u"}, {Kind: GroupKind, Name: "g"}, {Kind: ServiceAccountKind, Name: "sa", Namespace: "team-a"}}
	want := []Subject{{Kind: UserKind, APIGroup: GroupName, Name: "u"}, {Kind: GroupKind, APIGroup: GroupName, Name: "g"},
		{Kind: ServiceAccountKind, Name: "sa", Namespace: "team-a"}}
	for _, tc := range []struct {
		resource, ns string
		obj          meta.Object
	}{
		{"rolebindings", "team-a", &RoleBinding{ObjectMeta: meta.ObjectMeta{Name: "b", Namespace: "team-a"},
			RoleRef: RoleRef{Kind: KindClusterRole, Name: "view"}, Subjects: slices.Clone(subjects)}},
		{"clusterrolebindings", "", &ClusterRoleBinding{ObjectMeta: meta.ObjectMeta{Name: "b"},
			RoleRef: RoleRef{Kind: KindClusterRole, Name: "view"}, Subjects: slices.Clone(subjects)}},
	} {
		it, err := p.resources[tc.resource].Create(as(admin), tc.ns, tc.obj, registry.WriteOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.resource, err)
		}
		obj, err := it.Object()
		if err != nil {
			t.Fatal(err)
		}
		var ref RoleRef
		var got []Subject
		switch b := obj.(type) {
		case *RoleBinding:
			ref, got = b.RoleRef, b.Subjects
		case *ClusterRoleBinding:
			ref, got = b.RoleRef, b.Subjects
		}
		if ref.APIGroup != GroupName || !slices.Equal(got, want) {
			t.Errorf("%s: roleRef %+v, subjects %+v; want apiGroup %s and %+v", tc.resource, ref, got, GroupName, want)
		}
	}
}

// TestReconcileReadsByList checks that Reconcile learns what is stored
// from a list of each resource: on a fresh store and on a restart with
// nothing to change it reads no object on its own, and a changed object
// costs one read.
func TestReconcileReadsByList(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	defer mem.Close()
	cs := &storagetest.CountingReads{Interface: mem}
	stores, err := NewStores(storage.Shared(cs))
	if err != nil {
		t.Fatal(err)
	}
	policy := DefaultPolicy()
	steps := []struct {
		name     string
		before   func()
		maxReads int64
	}{
		{"fresh store", nil, 0},
		{"restart, nothing to change", nil, 0},
		{"restart, one role lost a rule", func() {
			if _, _, err := stores.ClusterRoles.Update(ctx, "", "system:basic-user", func(_ context.Context, cur *ClusterRole) (*ClusterRole, error) {
				cur.Rules = cur.Rules[:1]
				return cur, nil
			}, registry.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		cs.Reset()
		if err := Reconcile(ctx, stores, policy); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := cs.Reads(); got > st.maxReads {
			t.Errorf("%s: Reconcile read %d objects one by one, want at most %d", st.name, got, st.maxReads)
		}
		for _, want := range policy.ClusterRoles {
			if _, _, err := stores.ClusterRoles.Get(ctx, "", want.Name, meta.GetOptions{}); err != nil {
				t.Errorf("%s: ClusterRole %s: %v", st.name, want.Name, err)
			}
		}
		for _, want := range policy.ClusterRoleBindings {
			if _, _, err := stores.ClusterRoleBindings.Get(ctx, "", want.Name, meta.GetOptions{}); err != nil {
				t.Errorf("%s: ClusterRoleBinding %s: %v", st.name, want.Name, err)
			}
		}
	}
	if r, _, err := stores.ClusterRoles.Get(ctx, "", "system:basic-user", meta.GetOptions{}); err != nil || len(r.Rules) != 2 {
		t.Errorf("system:basic-user not restored: %v %v", r, err)
	}
}
