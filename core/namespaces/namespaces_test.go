package namespaces_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func newStore(t *testing.T) *registry.Store[*namespaces.Namespace] {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	st, err := namespaces.New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name string
		ns   namespaces.Namespace
		want string
	}{
		{"ok", namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "team-a"}}, ""},
		{"not a label", namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "a.b"}},
			`Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"finalizer", namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "b"}, Spec: namespaces.NamespaceSpec{Finalizers: []string{"mine"}}},
			`Namespace "b" is invalid: spec.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name nor is it fully qualified`},
		{"qualified finalizer", namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "c"}, Spec: namespaces.NamespaceSpec{Finalizers: []string{"example.com/mine"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := tt.ns
			_, err := newStore(t).Create(context.Background(), "", &ns, registry.WriteOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("create: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("create: %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestLifecycle: a namespace is created Active with the kubernetes
// finalizer and its name label; a DELETE makes it Terminating and keeps it
// while spec.finalizers is not empty; an update may not empty them, and the
// finalize subresource's update that does deletes the namespace.
func TestLifecycle(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	ns, err := st.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "team-a"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Status.Phase != namespaces.PhaseActive || !slices.Equal(ns.Spec.Finalizers, []string{"kubernetes"}) || ns.Labels[namespaces.LabelMetadataName] != "team-a" {
		t.Fatalf("created %+v", ns)
	}
	out, gone, err := st.Delete(ctx, "", "team-a", registry.DeleteOptions{})
	if err != nil || gone || out.Status.Phase != namespaces.PhaseTerminating || out.DeletionTimestamp == nil {
		t.Fatalf("delete: gone=%v err=%v %+v", gone, err, out)
	}
	// As kube-apiserver: a namespace and its generation carry no grace
	// period.
	if out.DeletionGracePeriodSeconds != nil || out.Generation != 0 {
		t.Errorf("delete set deletionGracePeriodSeconds %v, generation %d; kube-apiserver sets neither", out.DeletionGracePeriodSeconds, out.Generation)
	}
	// An ordinary update keeps spec.finalizers.
	upd, _, err := st.Update(ctx, "", "team-a", func(_ context.Context, cur *namespaces.Namespace) (*namespaces.Namespace, error) {
		cur.Spec.Finalizers = nil
		return cur, nil
	}, registry.UpdateOptions{})
	if err != nil || !slices.Equal(upd.Spec.Finalizers, []string{"kubernetes"}) {
		t.Fatalf("update emptying finalizers: %v %+v", err, upd)
	}
	// The finalize subresource's update empties them and deletes it.
	if _, _, err := st.Update(ctx, "", "team-a", func(_ context.Context, cur *namespaces.Namespace) (*namespaces.Namespace, error) {
		cur.Spec.Finalizers = nil
		return cur, nil
	}, registry.UpdateOptions{Subresource: "finalize"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "", "team-a", meta.GetOptions{}); !meta.IsNotFound(err) {
		t.Fatalf("after finalize: %v, want NotFound", err)
	}
}
