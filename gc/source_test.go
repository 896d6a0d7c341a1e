package gc

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestPartialKeepsWhatCollectingReads: the informers keep an object's key,
// uid, resourceVersion, deletionTimestamp, owner references and finalizers,
// and none of its labels, annotations or managedFields.
func TestPartialKeepsWhatCollectingReads(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	store := registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
		Resource: meta.GroupResource{Group: "example.com", Resource: "things"}, Kind: "Thing", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
	})
	yes := true
	refs := []meta.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid", BlockOwnerDeletion: &yes}}
	ctx := context.Background()
	created, err := store.Create(ctx, "ns", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{
		Name: "thing", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": "value"},
		OwnerReferences: refs, Finalizers: []string{"example.com/hold"},
	}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Marked for deletion, held by its finalizer.
	if _, _, err := store.Delete(ctx, "ns", "thing", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	it, err := registry.Serve(store).Get(ctx, "ns", "thing", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full, err := it.Object()
	if err != nil {
		t.Fatal(err)
	}
	want := full.GetObjectMeta()
	got, err := partial(it)
	if err != nil {
		t.Fatal(err)
	}
	m := got.ObjectMeta
	if m.Name != "thing" || m.Namespace != "ns" || m.UID != created.UID || m.ResourceVersion != want.ResourceVersion ||
		m.DeletionTimestamp == nil || !m.DeletionTimestamp.Time.Truncate(time.Second).Equal(want.DeletionTimestamp.Time.Truncate(time.Second)) ||
		len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != "owner-uid" || m.OwnerReferences[0].BlockOwnerDeletion == nil ||
		!slices.Equal(m.Finalizers, []string{"example.com/hold"}) {
		t.Errorf("kept %+v, want the key, uid, resourceVersion, deletionTimestamp, references and finalizers of %+v", m, want)
	}
	if m.Labels != nil || m.Annotations != nil || m.ManagedFields != nil || m.CreationTimestamp != (meta.Time{}) {
		t.Errorf("kept more than collecting reads: %+v", m)
	}
}
