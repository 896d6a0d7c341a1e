package gc

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestNodeKeepsWhatCollectingReads: a node keeps an object's key, uid,
// resourceVersion, whether it is being deleted, its owner references and
// the orphan and foregroundDeletion finalizers, read from the stored bytes
// of an item read from storage and from the object of another item.
func TestNodeKeepsWhatCollectingReads(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	store := registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
		Resource: meta.GroupResource{Group: "example.com", Resource: "things"}, Kind: "Thing", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
	})
	yes := true
	refs := []meta.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid", BlockOwnerDeletion: &yes}}
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		finalizers []string
		orphan     bool
		foreground bool
	}{
		{"another-finalizer", []string{"example.com/hold"}, false, false},
		{"orphan", []string{"example.com/hold", meta.FinalizerOrphanDependents}, true, false},
		{"foreground", []string{meta.FinalizerDeleteDependents, "example.com/hold"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created, err := store.Create(ctx, "ns", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{
				Name: tc.name, Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"big": "value"},
				OwnerReferences: refs, Finalizers: tc.finalizers,
			}}, registry.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Marked for deletion, held by its finalizers.
			if _, _, err := store.Delete(ctx, "ns", tc.name, registry.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			it, err := registry.Serve(store).Get(ctx, "ns", tc.name, meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok := it.Stored(); !ok {
				t.Fatal("an item read from storage has no stored value")
			}
			full, err := it.Object()
			if err != nil {
				t.Fatal(err)
			}
			want := full.GetObjectMeta()
			for _, src := range []struct {
				name string
				it   registry.Item
			}{{"stored", it}, {"object", registry.NewItem(full)}} {
				got, err := nodeOf(src.it)
				if err != nil {
					t.Fatal(err)
				}
				if got.namespace != "ns" || got.name != tc.name || got.UID() != created.UID || !got.hasUID(created.UID) || got.resourceVersion() != want.ResourceVersion ||
					!got.deleting || len(got.owners()) != 1 || got.owners()[0].UID != "owner-uid" || got.owners()[0].BlockOwnerDeletion == nil ||
					got.orphan != tc.orphan || got.foreground != tc.foreground {
					t.Errorf("%s: node %+v, want the key, uid, resourceVersion, deletion, references and finalizers of %+v", src.name, got, want)
				}
			}
		})
	}
}

// TestNodeOfBrokenValue: a stored value whose metadata cannot be read is
// an error, not a node of zero values.
func TestNodeOfBrokenValue(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	ctx := context.Background()
	if _, err := mem.Create(ctx, "/example.com/things/ns/x", []byte(`{"metadata":{"name":7}}`)); err != nil {
		t.Fatal(err)
	}
	store := registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
		Resource: meta.GroupResource{Group: "example.com", Resource: "things"}, Kind: "Thing", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
	})
	it, err := registry.Serve(store).Get(ctx, "ns", "x", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := nodeOf(it); err == nil {
		t.Errorf("nodeOf = %+v, want an error", n)
	}
}

// TestNodeCompactFields: a node keeps a canonical UUID in 16 bytes and a
// decimal resourceVersion as a number, and any other uid or
// resourceVersion (a remote resource's, a writer's other than the
// registry) as it came: each reads back exactly as given.
func TestNodeCompactFields(t *testing.T) {
	const canonical = "0f8fad5b-d9cb-469f-a165-70867728950e"
	for _, tc := range []struct {
		name, uid, rv string
		compact       bool // both held without extra
	}{
		{"registry's", canonical, "12345", true},
		{"uppercase uuid", "0F8FAD5B-D9CB-469F-A165-70867728950E", "1", false},
		{"braced uuid", "{0f8fad5b-d9cb-469f-a165-70867728950e}", "1", false},
		{"hyphen misplaced", "0f8fad5bd-9cb-469f-a165-70867728950e", "1", false},
		{"not hex", "0f8fad5b-d9cb-469f-a165-70867728950g", "1", false},
		{"other uid", "owner-uid", "1", false},
		{"no uid", "", "1", false},
		{"leading zero rv", canonical, "007", false},
		{"zero rv", canonical, "0", false},
		{"opaque rv", canonical, "abc", false},
		{"no rv", canonical, "", false},
		{"huge rv", canonical, "99999999999999999999", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode("ns", "x", tc.uid, tc.rv, false, nil, nil)
			if got := n.UID(); got != tc.uid {
				t.Errorf("UID() = %q, want %q", got, tc.uid)
			}
			if !n.hasUID(tc.uid) {
				t.Errorf("hasUID(%q) = false", tc.uid)
			}
			for _, other := range []string{canonical, "0f8fad5b-d9cb-469f-a165-70867728950f", "owner-uid", ""} {
				if other != tc.uid && n.hasUID(other) {
					t.Errorf("hasUID(%q) = true for uid %q", other, tc.uid)
				}
			}
			if got := n.resourceVersion(); got != tc.rv {
				t.Errorf("resourceVersion() = %q, want %q", got, tc.rv)
			}
			if ns, name, rv := n.InformerKey(); ns != "ns" || name != "x" || rv != tc.rv {
				t.Errorf("InformerKey() = %q, %q, %q", ns, name, rv)
			}
			if compact := n.extra == nil; compact != tc.compact {
				t.Errorf("held without extra: %v, want %v", compact, tc.compact)
			}
		})
	}
}
