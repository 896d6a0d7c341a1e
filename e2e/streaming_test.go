package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// TestStreamingListNotOlderThanAnOldRevision checks a streaming list (a
// watch with sendInitialEvents) through the watch cache, as kube-apiserver
// serves it: resourceVersionMatch=NotOlderThan with a revision the cache's
// window has long left sends the current state, never 410, and without
// allowWatchBookmarks it is accepted and the bookmark ending the initial
// events is left out.
func TestStreamingListNotOlderThanAnOldRevision(t *testing.T) {
	// A window of 10 changes: 30 writes move it past the first revision.
	w := StartWardle(t, "--watch-cache-sizes=flunders.wardle.example.com#10")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := w.Dynamic().Resource(flundersGVR).Namespace("stream")
	first, err := res.Create(ctx, newFlunder("stream", "a", "r0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := first.GetResourceVersion()
	cur := first
	for i := range 30 {
		if err := unstructured.SetNestedField(cur.Object, fmt.Sprintf("r%d", i+1), "spec", "flunderReference"); err != nil {
			t.Fatal(err)
		}
		if cur, err = res.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var created []*unstructured.Unstructured
	for _, bookmarks := range []bool{true, false} {
		t.Run(fmt.Sprintf("allowWatchBookmarks=%v", bookmarks), func(t *testing.T) {
			send := true
			wi, err := res.Watch(ctx, metav1.ListOptions{
				SendInitialEvents:    &send,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				ResourceVersion:      old,
				AllowWatchBookmarks:  bookmarks,
			})
			if err != nil {
				t.Fatalf("streaming list not older than %s: %v", old, err)
			}
			defer wi.Stop()
			next := func() watch.Event {
				t.Helper()
				select {
				case ev, ok := <-wi.ResultChan():
					if !ok {
						t.Fatal("the watch ended")
					}
					return ev
				case <-time.After(30 * time.Second):
					t.Fatal("no event within 30s")
				}
				return watch.Event{}
			}
			// The current state: a at its latest resourceVersion, and
			// what the subtests before created.
			want := map[string]string{"a": cur.GetResourceVersion()}
			for _, b := range created {
				want[b.GetName()] = b.GetResourceVersion()
			}
			for range want {
				ev := next()
				u, _ := ev.Object.(*unstructured.Unstructured)
				if ev.Type != watch.Added || u == nil || want[u.GetName()] != u.GetResourceVersion() {
					t.Fatalf("initial event %s %v; want the current state %v", ev.Type, ev.Object, want)
				}
			}
			var ev watch.Event
			if bookmarks {
				ev = next()
				if m, _ := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Bookmark || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					t.Fatalf("after the initial events: %s %v; want the bookmark ending them", ev.Type, ev.Object)
				}
			}
			b, err := res.Create(ctx, newFlunder("stream", fmt.Sprintf("b-%v", bookmarks), "x"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, b)
			ev = next()
			if u, _ := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Added || u == nil || u.GetName() != fmt.Sprintf("b-%v", bookmarks) {
				t.Fatalf("after the initial events: %s %v; want b's ADDED", ev.Type, ev.Object)
			}
		})
	}
}

// TestWatchBookmarkBeforeTimeout checks that a watch that allows bookmarks
// gets one shortly before its timeoutSeconds, as kube-apiserver's watch
// cache sends it, so that client-go resumes from the latest revision.
func TestWatchBookmarkBeforeTimeout(t *testing.T) {
	w := StartWardle(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := w.Dynamic().Resource(flundersGVR).Namespace("timeout")
	a, err := res.Create(ctx, newFlunder("timeout", "a", "x"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	timeout := int64(5)
	start := time.Now()
	wi, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: a.GetResourceVersion(), AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	var got []watch.Event
	for ev := range wi.ResultChan() {
		got = append(got, ev)
	}
	if d := time.Since(start); d < time.Duration(timeout-1)*time.Second {
		t.Fatalf("the watch ended after %v, before its timeout of %ds", d, timeout)
	}
	if len(got) != 1 || got[0].Type != watch.Bookmark {
		t.Fatalf("the watch got %d events (%v); want one BOOKMARK before its timeout", len(got), got)
	}
	// At a's revision or later: the cache's revision moves with writes to
	// other resources of the same etcd too.
	m, _ := got[0].Object.(*unstructured.Unstructured)
	if m == nil || rv(t, m.GetResourceVersion()) < rv(t, a.GetResourceVersion()) {
		t.Errorf("bookmark %v; want one at %s or later", got[0].Object, a.GetResourceVersion())
	}
}

func rv(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

// TestExpiredContinueToken checks a list continued after etcd compacted its
// revision, as kube-apiserver answers it: 410 Expired carrying an
// "inconsistent continue" token in metadata.continue, which lists the rest
// at the latest revision.
func TestExpiredContinueToken(t *testing.T) {
	// Without a watch cache, which would serve the page from its window.
	w := StartWardle(t, "--watch-cache=false", "--etcd-compaction-interval=1s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := w.Dynamic().Resource(flundersGVR).Namespace("cont")
	for _, name := range []string{"a", "b", "c"} {
		if _, err := res.Create(ctx, newFlunder("cont", name, "x"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := res.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.GetContinue() == "" {
		t.Fatalf("first page: %v (continue %q)", err, page.GetContinue())
	}
	if _, err := res.Create(ctx, newFlunder("cont", "d", "x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Wait for the compactor to pass the first page's revision.
	for {
		_, err := res.List(ctx, metav1.ListOptions{ResourceVersion: page.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			break
		}
		if err != nil {
			t.Fatalf("exact list at %s: %v", page.GetResourceVersion(), err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("etcd did not compact the first page's revision in time")
		case <-time.After(200 * time.Millisecond):
		}
	}
	_, err = res.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.GetContinue()})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 410 || status.Status().Reason != metav1.StatusReasonExpired {
		t.Fatalf("continuing a compacted list: %v; want 410 Expired", err)
	}
	token := status.Status().ListMeta.Continue
	if token == "" || !strings.Contains(status.Status().Message, "use the continue token in this response") {
		t.Fatalf("the 410 carries continue %q and message %q; want kube-apiserver's inconsistent continue token", token, status.Status().Message)
	}
	rest, err := res.List(ctx, metav1.ListOptions{Continue: token})
	if err != nil {
		t.Fatalf("listing with the inconsistent continue token: %v", err)
	}
	var names []string
	for _, it := range rest.Items {
		names = append(names, it.GetName())
	}
	if strings.Join(names, ",") != "b,c,d" {
		t.Errorf("the inconsistent continue token listed %v; want the rest at the latest revision: b, c, d", names)
	}
}
