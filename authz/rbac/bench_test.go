package rbac

import (
	"context"
	"fmt"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
)

// BenchmarkAuthorize1000Bindings is one RBAC decision with 1,000 bindings
// in the index (500 RoleBindings over 50 namespaces, 500
// ClusterRoleBindings, for 1,000 other users) and the user's own groups
// bound too: the decision looks up the user's and groups' bindings only.
func BenchmarkAuthorize1000Bindings(b *testing.B) {
	x := NewIndex()
	x.PutClusterRole(clusterRole("flunder-reader", Rule("wardle.example.com", []string{"flunders"}, "get", "list", "watch")))
	x.PutClusterRole(clusterRole("basic", Rule("authorization.k8s.io", []string{"selfsubjectaccessreviews"}, "create")))
	for i := range 50 {
		ns := fmt.Sprintf("ns-%d", i)
		x.PutRole(role(ns, "writer", Rule("wardle.example.com", []string{"flunders", "fischers"}, "create", "update", "delete")))
	}
	for i := range 500 {
		ns := fmt.Sprintf("ns-%d", i%50)
		x.PutRoleBinding(binding(ns, fmt.Sprintf("rb-%d", i), KindRole, "writer", user(fmt.Sprintf("user-%d", i))))
		x.PutClusterRoleBinding(clusterBinding(fmt.Sprintf("crb-%d", i), "flunder-reader", user(fmt.Sprintf("other-%d", i))))
	}
	// The user: bound by name in ns-7, and through a group cluster-wide.
	x.PutRoleBinding(binding("ns-7", "alice", KindRole, "writer", user("alice")))
	x.PutClusterRoleBinding(clusterBinding("authenticated", "basic", group(authn.AllAuthenticated)))
	x.MarkSynced()
	a := NewAuthorizer(x)
	alice := &authn.User{Name: "alice", Groups: []string{"developers", authn.AllAuthenticated}}
	for _, bc := range []struct {
		name  string
		attrs authz.Attributes
		allow bool
	}{
		{"allowed", res("delete", "wardle.example.com", "fischers", "", "ns-7", "f"), true},
		{"not allowed", res("delete", "wardle.example.com", "fischers", "", "ns-8", "f"), false},
	} {
		attrs := bc.attrs
		attrs.User = alice
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				d, _, _ := a.Authorize(ctx, attrs)
				if (d == authz.DecisionAllow) != bc.allow {
					b.Fatalf("decision %v", d)
				}
			}
		})
	}
}
