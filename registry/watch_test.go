package registry_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

const eventWait = 5 * time.Second

// next returns the next event, failing the test if none comes in time.
func next[T meta.Object](t *testing.T, ch <-chan registry.Event[T]) registry.Event[T] {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch ended early")
		}
		return ev
	case <-time.After(eventWait):
		t.Fatal("no event in time")
	}
	panic("unreachable")
}

// describe renders a widget event as "TYPE ns/name".
func describe(ev registry.Event[*Widget]) string {
	if ev.Type == meta.Error {
		return fmt.Sprintf("ERROR %v", ev.Err)
	}
	return fmt.Sprintf("%s %s/%s", ev.Type, ev.Object.Namespace, ev.Object.Name)
}

// nextN returns the next n events, skipping bookmarks unless keep is set.
func nextN(t *testing.T, ch <-chan registry.Event[*Widget], n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		ev := next(t, ch)
		if ev.Type == meta.Bookmark {
			continue
		}
		out = append(out, describe(ev))
	}
	return out
}

// quiet checks that no event other than a bookmark arrives before a marker
// object is created in namespace "marker" of the same store.
func quiet(t *testing.T, st *registry.Store[*Widget], ch <-chan registry.Event[*Widget], ns string) {
	t.Helper()
	mustCreate(t, st, widget(ns, "marker-"+strconv.FormatInt(time.Now().UnixNano(), 36), 0))
	for {
		ev := next(t, ch)
		if ev.Type == meta.Bookmark {
			continue
		}
		if ev.Object != nil && len(ev.Object.Name) > 7 && ev.Object.Name[:7] == "marker-" {
			return
		}
		t.Fatalf("unexpected event %s", describe(ev))
	}
}

func TestWatchFromRevision(t *testing.T) {
	st, _ := newWidgets(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := mustCreate(t, st, widget("ns", "a", 1))
	if _, _, err := st.Update(ctx, "ns", "a", edit(func(w *Widget) { w.Spec.Size = 2 }), registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, widget("other", "b", 1))
	if _, _, err := st.Delete(ctx, "ns", "a", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ch, err := st.Watch(ctx, "ns", meta.ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	got := nextN(t, ch, 2)
	if want := []string{"MODIFIED ns/a", "DELETED ns/a"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v (the namespace's changes after the revision)", got, want)
	}
	mustCreate(t, st, widget("ns", "c", 1))
	if got := nextN(t, ch, 1); got[0] != "ADDED ns/c" {
		t.Errorf("live event %v", got)
	}
}

func TestWatchEventObjects(t *testing.T) {
	st, _ := newWidgets(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := st.Watch(ctx, "", meta.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	created := mustCreate(t, st, widget("ns", "a", 1))
	ev := next(t, ch)
	if ev.Type != meta.Added || ev.Object.ResourceVersion != created.ResourceVersion || ev.Object.UID != created.UID ||
		ev.Object.APIVersion != "example.com/v1" || ev.Object.Kind != "Widget" {
		t.Errorf("ADDED object %+v", ev.Object)
	}
	deleted, _, err := st.Delete(ctx, "ns", "a", registry.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev = next(t, ch)
	// The DELETED object is the last state, at the revision of the delete.
	if ev.Type != meta.Deleted || ev.Object.ResourceVersion != deleted.ResourceVersion || ev.Object.Spec.Size != 1 {
		t.Errorf("DELETED object %+v, want resourceVersion %s", ev.Object, deleted.ResourceVersion)
	}
}

func TestWatchInitialState(t *testing.T) {
	st, _ := newWidgets(t)
	mustCreate(t, st, widget("ns", "a", 1))
	mustCreate(t, st, widget("ns", "b", 1))
	f, tr := false, true
	for _, tc := range []struct {
		name string
		opts meta.ListOptions
		want []string
	}{
		{"resourceVersion unset", meta.ListOptions{}, []string{"ADDED ns/a", "ADDED ns/b"}},
		{"resourceVersion 0", meta.ListOptions{ResourceVersion: "0"}, []string{"ADDED ns/a", "ADDED ns/b"}},
		{"sendInitialEvents=false", meta.ListOptions{SendInitialEvents: &f, ResourceVersionMatch: meta.ResourceVersionMatchNotOlderThan}, nil},
		{"sendInitialEvents=false at 0", meta.ListOptions{ResourceVersion: "0", SendInitialEvents: &f, ResourceVersionMatch: meta.ResourceVersionMatchNotOlderThan}, nil},
		{"sendInitialEvents=true", meta.ListOptions{SendInitialEvents: &tr, AllowWatchBookmarks: true, ResourceVersionMatch: meta.ResourceVersionMatchNotOlderThan}, []string{"ADDED ns/a", "ADDED ns/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch, err := st.Watch(ctx, "ns", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				if got := nextN(t, ch, len(tc.want)); !slices.Equal(got, tc.want) {
					t.Errorf("initial events %v, want %v", got, tc.want)
				}
			}
			quiet(t, st, ch, "ns")
		})
	}
}

func TestWatchSendInitialEventsEndsWithBookmark(t *testing.T) {
	st, mem := newWidgets(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreate(t, st, widget("ns", "a", 1))
	rev, _ := mem.CurrentRevision(ctx)
	tr := true
	ch, err := st.Watch(ctx, "ns", meta.ListOptions{SendInitialEvents: &tr, AllowWatchBookmarks: true, ResourceVersionMatch: meta.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); describe(ev) != "ADDED ns/a" {
		t.Fatalf("first event %s", describe(ev))
	}
	ev := next(t, ch)
	if ev.Type != meta.Bookmark {
		t.Fatalf("after the initial events: %s, want BOOKMARK", describe(ev))
	}
	if got := ev.Object.Annotations[meta.InitialEventsAnnotation]; got != "true" {
		t.Errorf("bookmark annotations %v, want %s=true", ev.Object.Annotations, meta.InitialEventsAnnotation)
	}
	if ev.Object.ResourceVersion != strconv.FormatInt(rev, 10) {
		t.Errorf("bookmark resourceVersion %s, want %d", ev.Object.ResourceVersion, rev)
	}
	if ev.Object.Name != "" || ev.Object.APIVersion != "example.com/v1" || ev.Object.Kind != "Widget" {
		t.Errorf("bookmark object %+v: want an empty Widget", ev.Object)
	}
}

func TestWatchBookmarks(t *testing.T) {
	st, _ := newWidgets(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := mustCreate(t, st, widget("ns", "a", 1))
	ch, err := st.Watch(ctx, "ns", meta.ListOptions{ResourceVersion: w.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	ev := next(t, ch)
	if ev.Type != meta.Bookmark {
		t.Fatalf("got %s, want a periodic BOOKMARK", describe(ev))
	}
	if ev.Object.ResourceVersion == "" || ev.Object.Annotations[meta.InitialEventsAnnotation] != "" {
		t.Errorf("periodic bookmark %+v", ev.Object.ObjectMeta)
	}

	// Without allowWatchBookmarks there are none.
	ch2, err := st.Watch(ctx, "ns", meta.ListOptions{ResourceVersion: w.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	// A periodic bookmark comes once per revision (the history core's
	// rule, as the watch cache's): write, and let the first watch see the
	// change and then the bookmark at its revision; by then the tick has
	// passed for the second watch as well, which must have sent the change
	// and nothing else.
	b := mustCreate(t, st, widget("ns", "b", 1))
	if ev := next(t, ch); describe(ev) != "ADDED ns/b" {
		t.Fatalf("got %s, want ADDED ns/b", describe(ev))
	}
	if ev := next(t, ch); ev.Type != meta.Bookmark || ev.Object.ResourceVersion != b.ResourceVersion {
		t.Fatalf("got %s at %s, want a BOOKMARK at %s", describe(ev), ev.Object.ResourceVersion, b.ResourceVersion)
	}
	if ev := next(t, ch2); describe(ev) != "ADDED ns/b" {
		t.Fatalf("without bookmarks: got %s, want ADDED ns/b", describe(ev))
	}
	select {
	case ev := <-ch2:
		t.Errorf("unrequested event %s", describe(ev))
	default:
	}
}

func TestWatchSelectors(t *testing.T) {
	st, _ := newWidgets(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := mustCreate(t, st, widget("ns", "a", 1))
	ch, err := st.Watch(ctx, "", meta.ListOptions{ResourceVersion: a.ResourceVersion, LabelSelector: "app=x", FieldSelector: "spec.color!=red"})
	if err != nil {
		t.Fatal(err)
	}
	setLabel := func(v string) func(*Widget) {
		return func(w *Widget) { w.Labels = map[string]string{"app": v} }
	}
	for _, step := range []struct {
		change func(*Widget)
		want   string
	}{
		{setLabel("x"), "ADDED ns/a"}, // starts matching
		{func(w *Widget) { w.Spec.Size = 5 }, "MODIFIED ns/a"},
		{func(w *Widget) { w.Spec.Color = "red" }, "DELETED ns/a"}, // stops matching
		{func(w *Widget) { w.Spec.Size = 6 }, ""},                  // still not matching: unseen
		{func(w *Widget) { w.Spec.Color = "blue" }, "ADDED ns/a"},
	} {
		if _, _, err := st.Update(ctx, "ns", "a", edit(step.change), registry.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if step.want == "" {
			continue
		}
		if got := nextN(t, ch, 1); got[0] != step.want {
			t.Errorf("got %s, want %s", got[0], step.want)
		}
	}
	// A DELETED event for an object that stopped matching carries the
	// last matching state.
	if _, _, err := st.Update(ctx, "ns", "a", edit(setLabel("y")), registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := next(t, ch)
	if ev.Type != meta.Deleted || ev.Object.Labels["app"] != "x" {
		t.Errorf("got %s with labels %v, want DELETED with the last matching labels", describe(ev), ev.Object.Labels)
	}

	if _, err := st.Watch(ctx, "", meta.ListOptions{FieldSelector: "spec.size=1"}); !meta.IsBadRequest(err) {
		t.Errorf("watch on an unsupported field: %v, want 400", err)
	}
}

func TestWatchTooOld(t *testing.T) {
	st, mem := newWidgets(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := mustCreate(t, st, widget("ns", "a", 1))
	mustCreate(t, st, widget("ns", "b", 1))
	mustCreate(t, st, widget("ns", "c", 1))
	latest, _ := mem.CurrentRevision(ctx)
	if err := mem.Compact(latest); err != nil {
		t.Fatal(err)
	}
	ch, err := st.Watch(ctx, "ns", meta.ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		if !meta.IsResourceExpired(err) {
			t.Fatalf("watch from a compacted revision: %v, want 410", err)
		}
		return
	}
	ev := next(t, ch)
	if ev.Type != meta.Error || !meta.IsResourceExpired(ev.Err) || meta.StatusOf(ev.Err).Code != 410 {
		t.Fatalf("got %s, want an ERROR event with 410 Expired", describe(ev))
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Error("watch went on after an ERROR event")
		}
	case <-time.After(eventWait):
		t.Error("watch did not end after an ERROR event")
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	st, _ := newWidgets(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := st.Watch(ctx, "ns", meta.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Error("event after cancel")
		}
	case <-time.After(eventWait):
		t.Fatal("watch did not end with its context")
	}
}
