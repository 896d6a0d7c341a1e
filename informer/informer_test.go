package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

type note struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Text            string `json:"text,omitempty"`
}

var notes = meta.GroupResource{Group: "example.com", Resource: "notes"}

func newStore(t *testing.T) (*registry.Store[*note], *memory.Store) {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	s, err := registry.NewStore(registry.Options[*note]{
		Resource: notes, Kind: "Note", NamespaceScoped: true, StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*note]{}, Storage: mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, mem
}

func create(t *testing.T, s *registry.Store[*note], ns, name, text string) {
	t.Helper()
	n := &note{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"text": text}}, Text: text}
	if _, err := s.Create(context.Background(), ns, n, registry.WriteOptions{}); err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
}

// recorder keeps what the handlers were told, as "add ns/name text",
// "update ns/name old->new", "delete ns/name".
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) handlers() informer.Handlers[*note] {
	rec := func(s string) { r.mu.Lock(); r.got = append(r.got, s); r.mu.Unlock() }
	return informer.Handlers[*note]{
		OnAdd:    func(n *note) { rec(fmt.Sprintf("add %s/%s %s", n.Namespace, n.Name, n.Text)) },
		OnUpdate: func(o, n *note) { rec(fmt.Sprintf("update %s/%s %s->%s", n.Namespace, n.Name, o.Text, n.Text)) },
		OnDelete: func(n *note) { rec(fmt.Sprintf("delete %s/%s", n.Namespace, n.Name)) },
	}
}

// waitFor polls until the recorder holds want (in order), for up to 30 s:
// generous, for a loaded machine.
func (r *recorder) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		got := slices.Clone(r.got)
		r.mu.Unlock()
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) || len(got) > len(want) {
			t.Fatalf("handlers were told:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// source wraps a store, counting lists, failing the first failLists of
// them, and letting a test end the current watch and hold the next one.
type source struct {
	*registry.Store[*note]
	lists     atomic.Int32
	failLists int32
	pageSizes []int64

	mu       sync.Mutex
	endWatch chan struct{} // closed: the current watch ends
	gate     chan struct{} // non-nil: the next Watch waits for it to close
}

func (s *source) List(ctx context.Context, ns string, opts meta.ListOptions) (*registry.ListResult[*note], error) {
	s.mu.Lock()
	s.pageSizes = append(s.pageSizes, opts.Limit)
	s.mu.Unlock()
	if opts.Continue == "" && s.lists.Add(1) <= s.failLists {
		return nil, meta.NewServiceUnavailable("not yet")
	}
	return s.Store.List(ctx, ns, opts)
}

func (s *source) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.Event[*note], error) {
	s.mu.Lock()
	gate := s.gate
	s.gate = nil
	end := make(chan struct{})
	s.endWatch = end
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	in, err := s.Store.Watch(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan registry.Event[*note])
	go func() {
		defer close(out)
		for {
			select {
			case ev, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-end:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// endAndHold ends the current watch and holds the next until the returned
// function is called. The current watch may have ended already without a
// new one started: a watch told to end can still pass on an event that was
// ready at the same moment, which the test then sees before the informer
// has watched again. Only a watch not yet told to end is ended.
func (s *source) endAndHold() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	if s.endWatch != nil {
		close(s.endWatch)
		s.endWatch = nil
	}
	s.mu.Unlock()
	return func() { close(gate) }
}

// compactNow compacts storage at its current revision: a watch held
// from before then can only end in 410 Gone.
func compactNow(t *testing.T, mem *memory.Store) {
	t.Helper()
	ctx := context.Background()
	rev, err := mem.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Compact(rev); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, inf *informer.Informer[*note]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitCtx, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	if err := inf.WaitForSync(waitCtx); err != nil {
		t.Fatal(err)
	}
}

func TestInformerListsInPagesThenWatches(t *testing.T) {
	store, _ := newStore(t)
	for i := range 5 {
		create(t, store, "ns", fmt.Sprintf("n%d", i), "v1")
	}
	src := &source{Store: store}
	rec := &recorder{}
	inf := informer.New(informer.Config[*note]{Source: src, Handlers: rec.handlers(), PageSize: 2, Name: "notes"})
	if inf.HasSynced() {
		t.Fatal("synced before Run")
	}
	run(t, inf)
	rec.waitFor(t, "add ns/n0 v1", "add ns/n1 v1", "add ns/n2 v1", "add ns/n3 v1", "add ns/n4 v1")
	src.mu.Lock()
	pages := slices.Clone(src.pageSizes)
	src.mu.Unlock()
	if !slices.Equal(pages, []int64{2, 2, 2}) {
		t.Errorf("the first list asked for pages of %v; want three of 2", pages)
	}
	if got := len(inf.List()); got != 5 {
		t.Errorf("List has %d objects; want 5", got)
	}

	ctx := context.Background()
	if _, _, err := store.Update(ctx, "ns", "n1", func(_ context.Context, n *note) (*note, error) {
		n.Text = "v2"
		return n, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Delete(ctx, "ns", "n2", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, store, "other", "n9", "v1")
	rec.waitFor(t, "add ns/n0 v1", "add ns/n1 v1", "add ns/n2 v1", "add ns/n3 v1", "add ns/n4 v1",
		"update ns/n1 v1->v2", "delete ns/n2", "add other/n9 v1")
	if n, ok := inf.Get("ns", "n1"); !ok || n.Text != "v2" {
		t.Errorf("Get(ns, n1) = %v, %v; want v2", n, ok)
	}
	if _, ok := inf.Get("ns", "n2"); ok {
		t.Error("Get(ns, n2) finds a deleted object")
	}
	if n := src.lists.Load(); n != 1 {
		t.Errorf("%d lists; a healthy watch needs one", n)
	}
}

// TestInformerRelistsOn410: a watch that ends is resumed from its revision;
// when storage has compacted that revision away (410 Gone), the informer
// lists again and tells its handlers what changed meanwhile.
func TestInformerRelistsOn410(t *testing.T) {
	store, mem := newStore(t)
	create(t, store, "ns", "a", "v1")
	create(t, store, "ns", "b", "v1")
	src := &source{Store: store}
	rec := &recorder{}
	inf := informer.New(informer.Config[*note]{Source: src, Handlers: rec.handlers(), MinBackoff: time.Millisecond, Name: "notes"})
	run(t, inf)
	rec.waitFor(t, "add ns/a v1", "add ns/b v1")

	// The watch ends and is resumed: no list.
	src.endAndHold()()
	create(t, store, "ns", "c", "v1")
	rec.waitFor(t, "add ns/a v1", "add ns/b v1", "add ns/c v1")
	if n := src.lists.Load(); n != 1 {
		t.Fatalf("%d lists after a watch ended; want the watch resumed, not a list", n)
	}

	// The watch ends, and before it resumes its revision is compacted.
	release := src.endAndHold()
	ctx := context.Background()
	if _, _, err := store.Delete(ctx, "ns", "b", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Update(ctx, "ns", "a", func(_ context.Context, n *note) (*note, error) {
		n.Text = "v2"
		return n, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, store, "ns", "d", "v1")
	compactNow(t, mem)
	release()
	// The relist's difference: in list order, then what is gone.
	rec.waitFor(t, "add ns/a v1", "add ns/b v1", "add ns/c v1", "update ns/a v1->v2", "add ns/d v1", "delete ns/b")
	if n := src.lists.Load(); n != 2 {
		t.Fatalf("%d lists; want one more after the 410", n)
	}
}

func TestInformerBacksOffAndSyncs(t *testing.T) {
	store, _ := newStore(t)
	create(t, store, "ns", "a", "v1")
	src := &source{Store: store, failLists: 3}
	inf := informer.New(informer.Config[*note]{Source: src, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond})
	run(t, inf)
	if n := src.lists.Load(); n != 4 {
		t.Errorf("synced after %d lists; want 4 (3 failed)", n)
	}
	if _, ok := inf.Get("ns", "a"); !ok {
		t.Error("the object is not in the local store")
	}
}

func TestInformerIndex(t *testing.T) {
	store, _ := newStore(t)
	create(t, store, "ns", "a", "red")
	create(t, store, "ns", "b", "blue")
	create(t, store, "other", "c", "red")
	byText := func(n *note) []string { return []string{n.Text} }
	inf := informer.New(informer.Config[*note]{Source: store, Indexers: map[string]informer.IndexFunc[*note]{"text": byText}})
	run(t, inf)
	names := func(ns []*note) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Namespace+"/"+n.Name)
		}
		return out
	}
	for _, tc := range []struct {
		index, value string
		want         []string
	}{
		{"text", "red", []string{"ns/a", "other/c"}},
		{"text", "blue", []string{"ns/b"}},
		{"text", "green", nil},
		{"unknown", "red", nil},
	} {
		if got := names(inf.ByIndex(tc.index, tc.value)); !slices.Equal(got, tc.want) {
			t.Errorf("ByIndex(%s, %s) = %v, want %v", tc.index, tc.value, got, tc.want)
		}
	}

	// An object moves between values as it changes.
	if _, _, err := store.Update(context.Background(), "ns", "a", func(_ context.Context, n *note) (*note, error) {
		n.Text = "blue"
		return n, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Equal(names(inf.ByIndex("text", "blue")), []string{"ns/a", "ns/b"}) {
		if time.Now().After(deadline) {
			t.Fatalf("ByIndex(text, blue) = %v after the update", names(inf.ByIndex("text", "blue")))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := names(inf.ByIndex("text", "red")); !slices.Equal(got, []string{"other/c"}) {
		t.Errorf("ByIndex(text, red) = %v after the update", got)
	}
}

func TestInformerWaitForSyncEndsWithContext(t *testing.T) {
	store, _ := newStore(t)
	src := &source{Store: store, failLists: 1 << 30}
	inf := informer.New(informer.Config[*note]{Source: src, MinBackoff: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	waitCtx, cancelWait := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelWait()
	if err := inf.WaitForSync(waitCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForSync of an informer that cannot list: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestInformerKeep: with Keep, the store holds only the objects it keeps
// and only those reach OnAdd and OnUpdate; one that stops passing is
// removed and told to OnUpdate; every delete reaches OnDelete, stored or
// not; a relist tells OnUpdate of every kept object, since one the store
// did not have may have gone unseen.
func TestInformerKeep(t *testing.T) {
	store, mem := newStore(t)
	create(t, store, "ns", "a", "keep1")
	create(t, store, "ns", "b", "drop1")
	create(t, store, "ns", "c", "keep1")
	src := &source{Store: store}
	rec := &recorder{}
	inf := informer.New(informer.Config[*note]{Source: src, Handlers: rec.handlers(), MinBackoff: time.Millisecond, Name: "notes",
		Keep: func(n *note) bool { return strings.HasPrefix(n.Text, "keep") }})
	run(t, inf)
	rec.waitFor(t, "add ns/a keep1", "add ns/c keep1")

	ctx := context.Background()
	set := func(name, text string) {
		t.Helper()
		if _, _, err := store.Update(ctx, "ns", name, func(_ context.Context, n *note) (*note, error) {
			n.Text = text
			return n, nil
		}, registry.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(name string) {
		t.Helper()
		if _, _, err := store.Delete(ctx, "ns", name, registry.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	set("b", "drop2")
	set("a", "drop2")
	set("b", "keep3")
	del("c")
	create(t, store, "ns", "d", "drop1")
	del("d")
	want := []string{"add ns/a keep1", "add ns/c keep1", "update ns/a keep1->drop2", "add ns/b keep3", "delete ns/c", "delete ns/d"}
	rec.waitFor(t, want...)
	if got := inf.List(); len(got) != 1 || got[0].Name != "b" {
		t.Errorf("List = %v, want b alone", got)
	}
	if _, ok := inf.Get("ns", "a"); ok {
		t.Error("Get(ns, a) finds an object Keep refuses")
	}

	// A relist: the kept object is told to OnUpdate at its same state.
	release := src.endAndHold()
	create(t, store, "ns", "e", "drop1")
	create(t, store, "ns", "f", "drop1")
	compactNow(t, mem)
	release()
	rec.waitFor(t, append(want, "update ns/b keep3->keep3")...)
	if n := src.lists.Load(); n != 2 {
		t.Fatalf("%d lists; want one more after the 410", n)
	}
}
