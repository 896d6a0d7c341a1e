package registry_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

func TestDeletePropagation(t *testing.T) {
	policy := func(p meta.DeletionPropagation) *meta.DeletionPropagation { return &p }
	yes, no := true, false
	for _, tc := range []struct {
		name       string
		finalizers []string
		opts       registry.DeleteOptions
		// deleted: gone at once; else marked with wantFinalizers.
		deleted        bool
		wantFinalizers []string
	}{
		{name: "default is background", opts: registry.DeleteOptions{GarbageCollection: true}, deleted: true},
		{name: "background", opts: registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: policy(meta.DeletePropagationBackground)}, deleted: true},
		{name: "orphan", opts: registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: policy(meta.DeletePropagationOrphan)},
			wantFinalizers: []string{"orphan"}},
		{name: "foreground", opts: registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: policy(meta.DeletePropagationForeground)},
			wantFinalizers: []string{"foregroundDeletion"}},
		{name: "orphanDependents true", opts: registry.DeleteOptions{GarbageCollection: true, OrphanDependents: &yes},
			wantFinalizers: []string{"orphan"}},
		{name: "orphanDependents false drops the foreground finalizer", finalizers: []string{"foregroundDeletion"},
			opts: registry.DeleteOptions{GarbageCollection: true, OrphanDependents: &no}, deleted: true},
		{name: "orphan keeps other finalizers", finalizers: []string{"example.com/f"},
			opts:           registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: policy(meta.DeletePropagationOrphan)},
			wantFinalizers: []string{"example.com/f", "orphan"}},
		{name: "orphan replaces foreground", finalizers: []string{"foregroundDeletion"},
			opts:           registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: policy(meta.DeletePropagationOrphan)},
			wantFinalizers: []string{"orphan"}},
		{name: "background drops orphan, other finalizers stay", finalizers: []string{"orphan", "example.com/f"},
			opts:           registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: policy(meta.DeletePropagationBackground)},
			wantFinalizers: []string{"example.com/f"}},
		{name: "no policy keeps the object's own orphan finalizer", finalizers: []string{"orphan"},
			opts: registry.DeleteOptions{GarbageCollection: true}, wantFinalizers: []string{"orphan"}},
		{name: "without a garbage collector the policy is ignored",
			opts: registry.DeleteOptions{PropagationPolicy: policy(meta.DeletePropagationOrphan)}, deleted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, dryRun := range []bool{true, false} {
				st, _ := newWidgets(t)
				ctx := context.Background()
				w := widget("ns", "w", 1)
				w.Finalizers = tc.finalizers
				mustCreate(t, st, w)
				opts := tc.opts
				opts.DryRun = dryRun
				out, deleted, err := st.Delete(ctx, "ns", "w", opts)
				if err != nil {
					t.Fatalf("dryRun=%v: %v", dryRun, err)
				}
				if deleted != tc.deleted {
					t.Fatalf("dryRun=%v: deleted=%v, want %v", dryRun, deleted, tc.deleted)
				}
				got, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{})
				if dryRun || !tc.deleted {
					if err != nil {
						t.Fatalf("dryRun=%v: object gone: %v", dryRun, err)
					}
				} else if !meta.IsNotFound(err) {
					t.Fatalf("object still there after the delete: %v", err)
				}
				if tc.deleted {
					continue
				}
				if !slices.Equal(out.Finalizers, tc.wantFinalizers) || out.DeletionTimestamp == nil {
					t.Errorf("dryRun=%v: delete answered finalizers %q deletionTimestamp %v, want %q and set", dryRun, out.Finalizers, out.DeletionTimestamp, tc.wantFinalizers)
				}
				if want := tc.wantFinalizers; dryRun {
					want = tc.finalizers
					if !slices.Equal(got.Finalizers, want) || got.DeletionTimestamp != nil {
						t.Errorf("dry run changed the stored object: finalizers %q deletionTimestamp %v", got.Finalizers, got.DeletionTimestamp)
					}
				} else if !slices.Equal(got.Finalizers, want) || got.DeletionTimestamp == nil {
					t.Errorf("stored finalizers %q deletionTimestamp %v, want %q and set", got.Finalizers, got.DeletionTimestamp, want)
				}
			}
		})
	}
}

// TestDeletePropagationChangesAMarkedObject: a second delete with another
// policy switches the finalizer of an object already being deleted, as in
// kube-apiserver (kubectl delete --cascade=orphan after a foreground one).
func TestDeletePropagationChangesAMarkedObject(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "w", 1))
	fg, orphan := meta.DeletePropagationForeground, meta.DeletePropagationOrphan
	first, _, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: &fg})
	if err != nil {
		t.Fatal(err)
	}
	second, deleted, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{GarbageCollection: true, PropagationPolicy: &orphan})
	if err != nil || deleted {
		t.Fatalf("second delete: deleted=%v %v", deleted, err)
	}
	if !slices.Equal(second.Finalizers, []string{"orphan"}) || second.DeletionTimestamp == nil || !second.DeletionTimestamp.Equal(first.DeletionTimestamp.Time) {
		t.Errorf("after the second delete: finalizers %q deletionTimestamp %v (first %v)", second.Finalizers, second.DeletionTimestamp, first.DeletionTimestamp)
	}
}

func TestCreateRefusesContradictoryGCMetadata(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name  string
		edit  func(m *meta.ObjectMeta)
		field string
		want  string
	}{
		{"two controllers", func(m *meta.ObjectMeta) {
			m.OwnerReferences = []meta.OwnerReference{
				{APIVersion: "v1", Kind: "A", Name: "a", UID: "1", Controller: &yes},
				{APIVersion: "v1", Kind: "B", Name: "b", UID: "2"},
				{APIVersion: "v1", Kind: "C", Name: "c", UID: "3", Controller: &yes},
			}
		}, "metadata.ownerReferences", `Only one reference can have Controller set to true. Found "true" in references for A/a and C/c`},
		{"orphan and foreground", func(m *meta.ObjectMeta) {
			m.Finalizers = []string{"orphan", "foregroundDeletion"}
		}, "metadata.finalizers", "finalizer orphan and foregroundDeletion cannot be both set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := newWidgets(t)
			w := widget("ns", "w", 1)
			tc.edit(&w.ObjectMeta)
			_, err := st.Create(context.Background(), "ns", w, registry.WriteOptions{})
			se, ok := err.(*meta.StatusError)
			if !ok || se.ErrStatus.Code != 422 || se.ErrStatus.Details == nil || len(se.ErrStatus.Details.Causes) != 1 {
				t.Fatalf("create: %v, want one 422 cause", err)
			}
			c := se.ErrStatus.Details.Causes[0]
			if c.Field != tc.field || !strings.HasSuffix(c.Message, ": "+tc.want) {
				t.Errorf("cause %s %q, want %s ending %q", c.Field, c.Message, tc.field, tc.want)
			}
		})
	}
}
