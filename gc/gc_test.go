package gc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/gc"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

type thing = meta.PartialObjectMetadata

// world is a collector over two kinds, a namespaced Thing and a
// cluster-scoped Root, in one memory storage.
type world struct {
	things, roots *registry.Store[*thing]
}

func newWorld(t *testing.T) world {
	t.Helper()
	mem := memory.New(memory.WithBookmarkInterval(20*time.Millisecond), memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	store := func(resource, kind string, namespaced bool) *registry.Store[*thing] {
		return registry.MustNewStore(registry.Options[*thing]{
			Resource:        meta.GroupResource{Group: "example.com", Resource: resource},
			Kind:            kind,
			NamespaceScoped: namespaced,
			StorageVersion:  "v1",
			Strategy:        registry.DefaultStrategy[*thing]{},
			Storage:         mem,
		})
	}
	w := world{things: store("things", "Thing", true), roots: store("roots", "Root", false)}
	c := gc.New(gc.Config{Resources: []registry.Resource{registry.Serve(w.things), registry.Serve(w.roots)}, RetryInterval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func (w world) create(t *testing.T, st *registry.Store[*thing], name string, owners ...*thing) *thing {
	t.Helper()
	yes := true
	o := &thing{ObjectMeta: meta.ObjectMeta{Name: name}}
	ns := ""
	if st == w.things {
		ns = "ns"
	}
	for _, ow := range owners {
		kind := "Thing"
		if ow.Namespace == "" {
			kind = "Root"
		}
		o.OwnerReferences = append(o.OwnerReferences, meta.OwnerReference{APIVersion: "example.com/v1", Kind: kind, Name: ow.Name, UID: ow.UID, BlockOwnerDeletion: &yes})
	}
	out, err := st.Create(context.Background(), ns, o, registry.WriteOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return out
}

// eventually polls cond with a generous deadline (the machine may be
// loaded).
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w world) gone(t *testing.T, name string) {
	t.Helper()
	eventually(t, name+" deleted", func() error {
		if _, _, err := w.things.Get(context.Background(), "ns", name, meta.GetOptions{}); !meta.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

func (w world) get(t *testing.T, name string) *thing {
	t.Helper()
	o, _, err := w.things.Get(context.Background(), "ns", name, meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func del(t *testing.T, st *registry.Store[*thing], ns, name string, p meta.DeletionPropagation) {
	t.Helper()
	if _, _, err := st.Delete(context.Background(), ns, name, registry.DeleteOptions{PropagationPolicy: &p, GarbageCollection: true}); err != nil {
		t.Fatal(err)
	}
}

func TestBackground(t *testing.T) {
	w := newWorld(t)
	owner := w.create(t, w.things, "owner")
	child := w.create(t, w.things, "child", owner)
	w.create(t, w.things, "grandchild", child)
	other := w.create(t, w.things, "other")
	both := w.create(t, w.things, "both", owner, other)
	del(t, w.things, "ns", "owner", meta.DeletePropagationBackground)
	w.gone(t, "child")
	w.gone(t, "grandchild")
	// A dependent with an owner left keeps living, without the reference
	// to the one that is gone.
	eventually(t, "reference dropped", func() error {
		got := w.get(t, "both")
		if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != other.UID || got.UID != both.UID {
			return fmt.Errorf("ownerReferences %+v", got.OwnerReferences)
		}
		return nil
	})
}

func TestOrphan(t *testing.T) {
	w := newWorld(t)
	owner := w.create(t, w.things, "owner")
	w.create(t, w.things, "child", owner)
	del(t, w.things, "ns", "owner", meta.DeletePropagationOrphan)
	w.gone(t, "owner")
	if got := w.get(t, "child"); len(got.OwnerReferences) != 0 {
		t.Errorf("orphan's ownerReferences %+v", got.OwnerReferences)
	}
}

func TestForeground(t *testing.T) {
	w := newWorld(t)
	owner := w.create(t, w.things, "owner")
	child := w.create(t, w.things, "child", owner)
	// The child's own finalizer holds it, and so the owner, in place.
	if _, _, err := w.things.Update(context.Background(), "ns", "child", func(_ context.Context, cur *thing) (*thing, error) {
		cur.Finalizers = []string{"example.com/hold"}
		return cur, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	del(t, w.things, "ns", "owner", meta.DeletePropagationForeground)
	eventually(t, "child marked for deletion", func() error {
		if got := w.get(t, "child"); got.DeletionTimestamp == nil {
			return fmt.Errorf("not marked")
		}
		return nil
	})
	if got := w.get(t, "owner"); got.DeletionTimestamp == nil || !slices.Equal(got.Finalizers, []string{meta.FinalizerDeleteDependents}) {
		t.Fatalf("owner went before its blocking dependent: %+v", got.ObjectMeta)
	}
	if _, _, err := w.things.Update(context.Background(), "ns", "child", func(_ context.Context, cur *thing) (*thing, error) {
		cur.Finalizers = nil
		return cur, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.gone(t, "child")
	w.gone(t, "owner")
	_ = child
}

func TestDanglingOwner(t *testing.T) {
	w := newWorld(t)
	root := w.create(t, w.roots, "root")
	// A reference to a uid no object has: the dependent is collected.
	w.create(t, w.things, "dangling", &thing{ObjectMeta: meta.ObjectMeta{Name: "root", UID: "not-" + root.UID}})
	// A cluster-scoped owner of a namespaced dependent is found.
	w.create(t, w.things, "kept", root)
	w.gone(t, "dangling")
	if got := w.get(t, "kept"); len(got.OwnerReferences) != 1 {
		t.Errorf("kept's ownerReferences %+v", got.OwnerReferences)
	}
	del(t, w.roots, "", "root", meta.DeletePropagationBackground)
	w.gone(t, "kept")
}

// watchCounter counts the watches open on a resource: an informer that
// stopped has none.
type watchCounter struct {
	registry.Resource
	open atomic.Int32
}

func (w *watchCounter) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.WatchEvent, error) {
	ch, err := w.Resource.Watch(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	w.open.Add(1)
	out := make(chan registry.WatchEvent)
	go func() {
		defer w.open.Add(-1)
		defer close(out)
		for e := range ch {
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// TestKindsAtRunTime: a kind discovered while the collector runs (a CRD's
// custom resources) is collected from then on, with owner references
// between it and a kind collected from the start in both directions, and
// its informer stops when it is no longer discovered.
func TestKindsAtRunTime(t *testing.T) {
	mem := memory.New(memory.WithBookmarkInterval(20*time.Millisecond), memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	store := func(group, resource, kind string) *registry.Store[*thing] {
		return registry.MustNewStore(registry.Options[*thing]{
			Resource: meta.GroupResource{Group: group, Resource: resource}, Kind: kind, NamespaceScoped: true,
			StorageVersion: "v1", Strategy: registry.DefaultStrategy[*thing]{}, Storage: mem,
		})
	}
	things, widgets := store("example.com", "things", "Thing"), store("crd.example.com", "widgets", "Widget")
	counted := &watchCounter{Resource: registry.Serve(widgets)}
	var mu sync.Mutex
	served := []registry.Resource{registry.Serve(things)}
	rediscover := make(chan struct{})
	c := gc.New(gc.Config{
		Discover: func() []registry.Resource {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(served)
		},
		Rediscover:    rediscover,
		RetryInterval: 50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	serve := func(res ...registry.Resource) {
		mu.Lock()
		served = res
		mu.Unlock()
		select {
		case rediscover <- struct{}{}:
		case <-time.After(30 * time.Second):
			t.Fatal("the collector does not take the rediscovery")
		}
	}
	create := func(st *registry.Store[*thing], name, ownerKind string, owner *thing) *thing {
		t.Helper()
		o := &thing{ObjectMeta: meta.ObjectMeta{Name: name}}
		if owner != nil {
			apiVersion := "example.com/v1"
			if ownerKind == "Widget" {
				apiVersion = "crd.example.com/v1"
			}
			o.OwnerReferences = []meta.OwnerReference{{APIVersion: apiVersion, Kind: ownerKind, Name: owner.Name, UID: owner.UID}}
		}
		out, err := st.Create(ctx, "ns", o, registry.WriteOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		return out
	}
	gone := func(st *registry.Store[*thing], name string) {
		t.Helper()
		eventually(t, name+" deleted", func() error {
			if _, _, err := st.Get(ctx, "ns", name, meta.GetOptions{}); !meta.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
	}

	// Made before widgets are served.
	wOwner := create(widgets, "w-owner", "", nil)
	create(things, "t-child", "Widget", wOwner)
	tOwner := create(things, "t-owner", "", nil)
	create(widgets, "w-child", "Thing", tOwner)
	wOrphaner := create(widgets, "w-orphaner", "", nil)
	create(things, "t-orphan", "Widget", wOrphaner)

	serve(registry.Serve(things), counted)
	eventually(t, "the widgets' informer watching", func() error {
		if n := counted.open.Load(); n != 1 {
			return fmt.Errorf("%d watches open", n)
		}
		return nil
	})
	// A built-in owning a custom resource.
	del(t, things, "ns", "t-owner", meta.DeletePropagationBackground)
	gone(widgets, "w-child")
	// A custom resource owning a built-in.
	del(t, widgets, "ns", "w-owner", meta.DeletePropagationBackground)
	gone(things, "t-child")
	// Orphaning across kinds (its dependent made long before, so that
	// the collector has it: a dependent it has not seen yet when its
	// owner is orphaned is collected, as kube's would be).
	del(t, widgets, "ns", "w-orphaner", meta.DeletePropagationOrphan)
	gone(widgets, "w-orphaner")
	if o, _, err := things.Get(ctx, "ns", "t-orphan", meta.GetOptions{}); err != nil || len(o.OwnerReferences) != 0 {
		t.Errorf("t-orphan: %v, ownerReferences %+v", err, o)
	}

	// No longer served: the informer stops.
	serve(registry.Serve(things))
	eventually(t, "the widgets' informer stopped", func() error {
		if n := counted.open.Load(); n != 0 {
			return fmt.Errorf("%d watches open", n)
		}
		return nil
	})
}

// TestWaitsForCompleteDiscovery: while Complete says some kinds are not yet
// discovered (the chain's custom resources not yet served), an owner
// deleted with the orphan finalizer waits, so that its dependents of
// those kinds are orphaned, not collected, once they are.
func TestWaitsForCompleteDiscovery(t *testing.T) {
	mem := memory.New(memory.WithBookmarkInterval(20*time.Millisecond), memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	store := func(group, resource, kind string) *registry.Store[*thing] {
		return registry.MustNewStore(registry.Options[*thing]{
			Resource: meta.GroupResource{Group: group, Resource: resource}, Kind: kind, NamespaceScoped: true,
			StorageVersion: "v1", Strategy: registry.DefaultStrategy[*thing]{}, Storage: mem,
		})
	}
	things, widgets := store("example.com", "things", "Thing"), store("crd.example.com", "widgets", "Widget")
	var mu sync.Mutex
	served := []registry.Resource{registry.Serve(things)}
	var complete atomic.Bool
	rediscover := make(chan struct{}, 1)
	c := gc.New(gc.Config{
		Discover: func() []registry.Resource {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(served)
		},
		Rediscover:    rediscover,
		Complete:      complete.Load,
		RetryInterval: 50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	owner, err := things.Create(ctx, "ns", &thing{ObjectMeta: meta.ObjectMeta{Name: "owner"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.Create(ctx, "ns", &thing{ObjectMeta: meta.ObjectMeta{Name: "dependent", OwnerReferences: []meta.OwnerReference{
		{APIVersion: "example.com/v1", Kind: "Thing", Name: "owner", UID: owner.UID}}}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	del(t, things, "ns", "owner", meta.DeletePropagationOrphan)
	time.Sleep(500 * time.Millisecond) // ten retries: a collector that does not wait removes the finalizer
	if _, _, err := things.Get(ctx, "ns", "owner", meta.GetOptions{}); err != nil {
		t.Fatalf("the owner went before every kind was discovered: %v", err)
	}

	mu.Lock()
	served = []registry.Resource{registry.Serve(things), registry.Serve(widgets)}
	mu.Unlock()
	complete.Store(true)
	rediscover <- struct{}{}
	eventually(t, "owner deleted", func() error {
		if _, _, err := things.Get(ctx, "ns", "owner", meta.GetOptions{}); !meta.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	d, _, err := widgets.Get(ctx, "ns", "dependent", meta.GetOptions{})
	if err != nil || len(d.OwnerReferences) != 0 {
		t.Errorf("dependent: %v %+v, want orphaned", err, d)
	}
}

// unlistable is a resource whose list always fails, as an aggregated API
// server refusing the collector's list would.
type unlistable struct{ registry.Resource }

func (unlistable) List(context.Context, string, meta.ListOptions) (*registry.List, error) {
	return nil, meta.NewForbidden(meta.GroupResource{Group: "remote.example.com", Resource: "gadgets"}, "", errors.New("no"))
}

// TestUnlistableResourceHoldsOnlyForAWhile: a kind whose informer cannot
// list holds orphaning for SyncTimeout, not for ever.
func TestUnlistableResourceHoldsOnlyForAWhile(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	store := func(group, resource, kind string) *registry.Store[*thing] {
		return registry.MustNewStore(registry.Options[*thing]{
			Resource: meta.GroupResource{Group: group, Resource: resource}, Kind: kind, NamespaceScoped: true,
			StorageVersion: "v1", Strategy: registry.DefaultStrategy[*thing]{}, Storage: mem,
		})
	}
	things := store("example.com", "things", "Thing")
	gadgets := store("remote.example.com", "gadgets", "Gadget")
	c := gc.New(gc.Config{Resources: []registry.Resource{registry.Serve(things), unlistable{registry.Serve(gadgets)}},
		RetryInterval: 50 * time.Millisecond, SyncTimeout: 500 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	w := world{things: things}
	owner := w.create(t, things, "owner")
	w.create(t, things, "child", owner)
	del(t, things, "ns", "owner", meta.DeletePropagationOrphan)
	eventually(t, "the owner orphaned its child and gone", func() error {
		if _, _, err := things.Get(context.Background(), "ns", "owner", meta.GetOptions{}); !meta.IsNotFound(err) {
			return fmt.Errorf("owner still there (%v)", err)
		}
		if got := w.get(t, "child"); len(got.OwnerReferences) != 0 {
			return fmt.Errorf("child's ownerReferences %+v", got.OwnerReferences)
		}
		return nil
	})
}
