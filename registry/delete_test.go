package registry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

func TestDelete(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	cur := mustCreate(t, st, widget("ns", "w", 1))
	out, deleted, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !deleted || out.UID != cur.UID || out.Name != "w" {
		t.Errorf("delete returned deleted=%v %+v", deleted, out.ObjectMeta)
	}
	_, _, err = st.Get(ctx, "ns", "w", meta.GetOptions{})
	wantStatus(t, err, 404, meta.StatusReasonNotFound, `widgets.example.com "w" not found`)
	_, _, err = st.Delete(ctx, "ns", "w", registry.DeleteOptions{})
	wantStatus(t, err, 404, meta.StatusReasonNotFound, `widgets.example.com "w" not found`)
}

func TestDeletePreconditions(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	cur := mustCreate(t, st, widget("ns", "w", 1))
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		pre     meta.Preconditions
		message string
	}{
		{
			name: "uid", pre: meta.Preconditions{UID: str("other-uid")},
			message: `Operation cannot be fulfilled on Widget.example.com "w": the UID in the precondition (other-uid) does not match the UID in record (` + cur.UID + `). The object might have been deleted and then recreated`,
		},
		{
			name: "resourceVersion", pre: meta.Preconditions{ResourceVersion: str("1")},
			message: `Operation cannot be fulfilled on Widget.example.com "w": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (` + cur.ResourceVersion + `). The object might have been modified`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre := tc.pre
			_, _, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{Preconditions: &pre})
			wantStatus(t, err, 409, meta.StatusReasonConflict, tc.message)
			if _, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{}); err != nil {
				t.Errorf("object gone after a failed precondition: %v", err)
			}
		})
	}
	_, deleted, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{Preconditions: &meta.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
	if err != nil || !deleted {
		t.Fatalf("delete with matching preconditions: deleted=%v %v", deleted, err)
	}
}

func TestDeleteDryRun(t *testing.T) {
	st, mem := newWidgets(t)
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "plain", 1))
	fin := widget("ns", "fin", 1)
	fin.Finalizers = []string{"example.com/f"}
	mustCreate(t, st, fin)
	before, _ := mem.CurrentRevision(ctx)
	for _, name := range []string{"plain", "fin"} {
		out, deleted, err := st.Delete(ctx, "ns", name, registry.DeleteOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if out.Name != name || deleted != (name == "plain") {
			t.Errorf("dry-run delete of %s: deleted=%v", name, deleted)
		}
		// kube-apiserver answers a dry-run delete of an object with
		// finalizers with the object as the delete would leave it.
		if marked := out.DeletionTimestamp != nil && out.DeletionGracePeriodSeconds != nil; marked != (name == "fin") {
			t.Errorf("dry-run delete of %s answered deletionTimestamp %v, grace %v", name, out.DeletionTimestamp, out.DeletionGracePeriodSeconds)
		}
		got, _, err := st.Get(ctx, "ns", name, meta.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil {
			t.Errorf("dry-run delete of %s changed it: %v %v", name, err, got)
		}
	}
	if after, _ := mem.CurrentRevision(ctx); after != before {
		t.Errorf("revision moved from %d to %d on dry runs", before, after)
	}
}

func TestDeleteAdmission(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	cur := mustCreate(t, st, widget("ns", "w", 1))
	var saw meta.Object
	_, _, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{Validate: func(_ context.Context, old meta.Object) error {
		saw = old
		return meta.NewForbidden(meta.GroupResource{Group: "example.com", Resource: "widgets"}, "w", errors.New("keep it"))
	}})
	wantStatus(t, err, 403, meta.StatusReasonForbidden, `widgets.example.com "w" is forbidden: keep it`)
	if w, ok := saw.(*Widget); !ok || w.UID != cur.UID {
		t.Errorf("validating admission saw %v, want the current object", saw)
	}
	if _, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{}); err != nil {
		t.Errorf("refused delete deleted: %v", err)
	}
}

func TestFinalizers(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	in := widget("ns", "w", 1)
	in.Finalizers = []string{"example.com/a", "example.com/b"}
	cur := mustCreate(t, st, in)

	// Delete marks the object and keeps it.
	out, deleted, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if deleted {
		t.Error("deleted = true for an object with finalizers")
	}
	if out.DeletionTimestamp == nil || !out.DeletionTimestamp.Equal(testNow) {
		t.Errorf("deletionTimestamp = %v, want %v", out.DeletionTimestamp, testNow)
	}
	if out.DeletionGracePeriodSeconds == nil || *out.DeletionGracePeriodSeconds != 0 {
		t.Errorf("deletionGracePeriodSeconds = %v, want 0", out.DeletionGracePeriodSeconds)
	}
	if out.Generation != cur.Generation+1 {
		t.Errorf("generation = %d, want %d (bumped on graceful deletion)", out.Generation, cur.Generation+1)
	}
	marked, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{})
	if err != nil || marked.DeletionTimestamp == nil || marked.ResourceVersion != out.ResourceVersion {
		t.Fatalf("marked object: %v %+v", err, marked)
	}

	// Deleting again changes nothing.
	again, deleted, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{})
	if err != nil || deleted || again.ResourceVersion != marked.ResourceVersion {
		t.Errorf("second delete: deleted=%v err=%v rv %s -> %s", deleted, err, marked.ResourceVersion, again.ResourceVersion)
	}

	// No new finalizers once deleting.
	_, _, err = st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Finalizers = append(w.Finalizers, "example.com/c") }), registry.UpdateOptions{})
	wantStatus(t, err, 422, meta.StatusReasonInvalid,
		`Widget.example.com "w" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ["example.com/c"]`)

	// The deletion timestamp cannot be moved or cleared by an update.
	kept, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) {
		w.DeletionTimestamp = nil
		w.Finalizers = []string{"example.com/b"}
	}), registry.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kept.DeletionTimestamp == nil || !kept.DeletionTimestamp.Equal(testNow) || len(kept.Finalizers) != 1 {
		t.Errorf("after removing one finalizer: %+v", kept.ObjectMeta)
	}

	// Removing the last finalizer deletes the object; the update answers
	// the object as the client made it, as kube-apiserver does.
	last, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Finalizers = nil }), registry.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(last.Finalizers) != 0 || last.DeletionTimestamp == nil || last.UID != cur.UID {
		t.Errorf("update that removed the last finalizer returned %+v", last.ObjectMeta)
	}
	_, _, err = st.Get(ctx, "ns", "w", meta.GetOptions{})
	wantStatus(t, err, 404, meta.StatusReasonNotFound, `widgets.example.com "w" not found`)
}

// A status update that leaves the finalizers of a deleting object alone
// does not complete the delete.
func TestFinalizersStatusUpdateKeepsObject(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	in := widget("ns", "w", 1)
	in.Finalizers = []string{"example.com/a"}
	mustCreate(t, st, in)
	if _, _, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) {
		w.Finalizers = nil // ignored: the status subresource keeps metadata
		w.Status.Ready = true
	}), registry.UpdateOptions{Subresource: "status"})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Status.Ready || len(out.Finalizers) != 1 {
		t.Errorf("status update on a deleting object: %+v", out)
	}
	if _, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{}); err != nil {
		t.Errorf("object gone after a status update: %v", err)
	}
}
