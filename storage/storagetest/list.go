package storagetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

// item is what the suite compares list results by.
type item struct {
	key   string
	value string
	rev   int64
}

func items(kvs []storage.KeyValue) []item {
	out := make([]item, len(kvs))
	for i, kv := range kvs {
		out[i] = item{kv.Key, string(kv.Value), kv.Revision}
	}
	return out
}

func sameItems(t testing.TB, what string, got, want []item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d items %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: item %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func mustList(t testing.TB, ctx context.Context, s storage.Interface, prefix string, opts storage.ListOptions) storage.ListResult {
	t.Helper()
	l, err := s.List(ctx, prefix, opts)
	if err != nil {
		t.Fatalf("List(%q, %+v): %v", prefix, opts, err)
	}
	if l.Revision <= 0 {
		t.Fatalf("List(%q) returned revision %d", prefix, l.Revision)
	}
	for i := 1; i < len(l.Items); i++ {
		if l.Items[i-1].Key >= l.Items[i].Key {
			t.Fatalf("List(%q): items out of key order: %q before %q", prefix, l.Items[i-1].Key, l.Items[i].Key)
		}
	}
	return l
}

func testList(t *testing.T, f Factory) {
	t.Run("empty prefix", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		for _, limit := range []int64{0, 5} {
			l := mustList(t, ctx, s, "/list/", storage.ListOptions{Limit: limit})
			if len(l.Items) != 0 || l.Continue != "" {
				t.Fatalf("List of an empty prefix with limit %d = %+v", limit, l)
			}
		}
	})
	t.Run("prefix isolation", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		ra := mustCreate(t, ctx, s, "/iso/a/x", value("x", 1))
		mustCreate(t, ctx, s, "/iso/ab/x", value("x", 2))
		mustCreate(t, ctx, s, "/iso/a", value("a", 3))
		rb := mustCreate(t, ctx, s, "/iso/a/y", value("y", 4))
		l := mustList(t, ctx, s, "/iso/a/", storage.ListOptions{})
		sameItems(t, "List /iso/a/", items(l.Items), []item{
			{"/iso/a/x", string(value("x", 1)), ra},
			{"/iso/a/y", string(value("y", 4)), rb},
		})
	})
	t.Run("revision semantics", func(t *testing.T) { testListRevisions(t, f) })
	t.Run("pages", func(t *testing.T) { testListPages(t, f) })
	t.Run("pages are a consistent snapshot under concurrent writes", func(t *testing.T) { testListSnapshot(t, f) })
	t.Run("predicate", func(t *testing.T) { testListPredicate(t, f) })
	t.Run("continue token errors", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		for i := range 3 {
			mustCreate(t, ctx, s, fmt.Sprintf("/list/%d", i), value(fmt.Sprint(i), i))
		}
		page := mustList(t, ctx, s, "/list/", storage.ListOptions{Limit: 1})
		if page.Continue == "" {
			t.Fatal("no continue token")
		}
		_, err := s.List(ctx, "/list/", storage.ListOptions{Limit: 1, Continue: page.Continue, Revision: page.Revision})
		wantCode(t, "List with Continue and Revision", err, storage.ErrInvalidObject)
		_, err = s.List(ctx, "/list/", storage.ListOptions{Limit: 1, Continue: page.Continue, Revision: page.Revision, Match: storage.MatchExact})
		wantCode(t, "List with Continue and an Exact Revision", err, storage.ErrInvalidObject)
		for _, token := range []string{
			"not a token",
			base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v0","rv":1,"start":"a"}`)),
			base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"../../x"}`)),
		} {
			_, err := s.List(ctx, "/list/", storage.ListOptions{Limit: 1, Continue: token})
			wantCode(t, fmt.Sprintf("List with continue %q", token), err, storage.ErrInvalidObject)
		}
	})
	t.Run("compacted revision and continue are Expired", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		ra := mustCreate(t, ctx, s, "/list/a", value("a", 1))
		rb := mustCreate(t, ctx, s, "/list/b", value("b", 1))
		page := mustList(t, ctx, s, "/list/", storage.ListOptions{Limit: 1})
		rc := mustCreate(t, ctx, s, "/list/c", value("c", 1))
		if err := f.Compact(ctx, s, rc); err != nil {
			t.Fatalf("Compact(%d): %v", rc, err)
		}
		_, err := s.List(ctx, "/list/", storage.ListOptions{Revision: rb, Match: storage.MatchExact})
		wantCode(t, "List Exact at a compacted revision", err, storage.ErrExpired)
		_, err = s.List(ctx, "/list/", storage.ListOptions{Revision: rb, Limit: 10})
		wantCode(t, "List with a limit at a compacted revision", err, storage.ErrExpired)
		_, err = s.List(ctx, "/list/", storage.ListOptions{Limit: 1, Continue: page.Continue})
		wantCode(t, "List with a continue token older than compaction", err, storage.ErrExpired)
		// As kube-apiserver's, the error carries an "inconsistent
		// continue" token: the rest of the list, at the latest revision.
		var se *storage.Error
		if !errors.As(err, &se) || se.Continue == "" {
			t.Fatalf("the Expired error of a continued list carries no continue token: %#v", err)
		}
		rd := mustCreate(t, ctx, s, "/list/d", value("d", 1))
		rest := mustList(t, ctx, s, "/list/", storage.ListOptions{Limit: 2, Continue: se.Continue})
		if rest.Revision < rd {
			t.Fatalf("the inconsistent continue token listed at revision %d, want the latest (>= %d)", rest.Revision, rd)
		}
		sameItems(t, "List with the inconsistent continue token", items(rest.Items), []item{
			{"/list/b", string(value("b", 1)), rb},
			{"/list/c", string(value("c", 1)), rc},
		})
		if rest.Continue == "" {
			t.Fatal("the page after an inconsistent continue token has no continue token; /list/d remains")
		}
		last := mustList(t, ctx, s, "/list/", storage.ListOptions{Limit: 2, Continue: rest.Continue})
		sameItems(t, "the page after the inconsistent one", items(last.Items), []item{{"/list/d", string(value("d", 1)), rd}})
		if last.Revision != rest.Revision || last.Continue != "" {
			t.Fatalf("last page at revision %d with continue %q; want revision %d and no token", last.Revision, last.Continue, rest.Revision)
		}
		l := mustList(t, ctx, s, "/list/", storage.ListOptions{Revision: rc, Match: storage.MatchExact})
		sameItems(t, "List Exact at the compacted revision", items(l.Items), []item{
			{"/list/a", string(value("a", 1)), ra},
			{"/list/b", string(value("b", 1)), rb},
			{"/list/c", string(value("c", 1)), rc},
		})
		// NotOlderThan an old revision serves the latest data: no history needed.
		l = mustList(t, ctx, s, "/list/", storage.ListOptions{Revision: rb, Match: storage.MatchNotOlderThan})
		if len(l.Items) != 4 {
			t.Fatalf("List NotOlderThan a compacted revision returned %d items, want 4", len(l.Items))
		}
	})
}

func testListRevisions(t *testing.T, f Factory) {
	s, ctx := newStore(t, f), testContext(t)
	ra1 := mustCreate(t, ctx, s, "/list/a", value("a", 1))
	rb := mustCreate(t, ctx, s, "/list/b", value("b", 1))
	ra2 := mustUpdate(t, ctx, s, "/list/a", value("a", 2)).Revision
	mustDelete(t, ctx, s, "/list/b")
	rc := mustCreate(t, ctx, s, "/list/c", value("c", 1))
	cur := currentRevision(t, ctx, s)
	old := []item{{"/list/a", string(value("a", 1)), ra1}, {"/list/b", string(value("b", 1)), rb}}
	latest := []item{{"/list/a", string(value("a", 2)), ra2}, {"/list/c", string(value("c", 1)), rc}}
	future := cur + 1000

	for _, tc := range []struct {
		name    string
		opts    storage.ListOptions
		want    []item
		wantRev int64 // 0: at least cur
		wantErr *storage.Error
	}{
		{name: "zero is the latest", opts: storage.ListOptions{}, want: latest},
		{name: "Exact at an old revision", opts: storage.ListOptions{Revision: rb, Match: storage.MatchExact}, want: old, wantRev: rb},
		{name: "Exact at the current revision", opts: storage.ListOptions{Revision: cur, Match: storage.MatchExact}, want: latest, wantRev: cur},
		{name: "Exact at a future revision", opts: storage.ListOptions{Revision: future, Match: storage.MatchExact}, wantErr: storage.ErrTooLargeResourceVersion},
		{name: "NotOlderThan an old revision", opts: storage.ListOptions{Revision: rb, Match: storage.MatchNotOlderThan}, want: latest},
		{name: "NotOlderThan a future revision", opts: storage.ListOptions{Revision: future, Match: storage.MatchNotOlderThan}, wantErr: storage.ErrTooLargeResourceVersion},
		{name: "default with a limit is Exact", opts: storage.ListOptions{Revision: rb, Limit: 10}, want: old, wantRev: rb},
		{name: "default without a limit is NotOlderThan", opts: storage.ListOptions{Revision: rb}, want: latest},
		{name: "default without a limit at a future revision", opts: storage.ListOptions{Revision: future}, wantErr: storage.ErrTooLargeResourceVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			l, err := s.List(ctx, "/list/", tc.opts)
			if tc.wantErr != nil {
				wantCode(t, "List", err, tc.wantErr)
				if d := time.Since(start); d > maxRevisionWait {
					t.Fatalf("List waited %v before failing; want at most %v", d, maxRevisionWait)
				}
				return
			}
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			sameItems(t, "List", items(l.Items), tc.want)
			if tc.wantRev != 0 && l.Revision != tc.wantRev {
				t.Fatalf("List revision %d, want %d", l.Revision, tc.wantRev)
			}
			if tc.wantRev == 0 && l.Revision < cur {
				t.Fatalf("List revision %d is older than the current %d", l.Revision, cur)
			}
		})
	}

	t.Run("AnyRevision serves a consistent state", func(t *testing.T) {
		l := mustList(t, ctx, s, "/list/", storage.ListOptions{AnyRevision: true})
		exact := mustList(t, ctx, s, "/list/", storage.ListOptions{Revision: l.Revision, Match: storage.MatchExact})
		sameItems(t, "List AnyRevision vs Exact at its revision", items(l.Items), items(exact.Items))
	})
	t.Run("NotOlderThan waits for a write that is coming", func(t *testing.T) {
		cur := currentRevision(t, ctx, s)
		done := make(chan error, 1)
		go func() {
			time.Sleep(100 * time.Millisecond)
			_, err := s.Create(ctx, "/list/d", value("d", 1))
			done <- err
		}()
		l, err := s.List(ctx, "/list/", storage.ListOptions{Revision: cur + 1, Match: storage.MatchNotOlderThan})
		if werr := <-done; werr != nil {
			t.Fatalf("Create: %v", werr)
		}
		if err != nil {
			t.Fatalf("List NotOlderThan one ahead: %v", err)
		}
		if l.Revision < cur+1 {
			t.Fatalf("List revision %d is older than the %d asked for", l.Revision, cur+1)
		}
	})
}

// pageAll lists prefix page by page and checks what every page must have.
// wantTotal, when not negative, is the number of items the whole list must
// have, against which RemainingItemCount is checked.
func pageAll(t testing.TB, ctx context.Context, s storage.Interface, prefix string, opts storage.ListOptions, wantTotal int, between func()) (all []storage.KeyValue, rev int64, pages int) {
	t.Helper()
	for {
		l := mustList(t, ctx, s, prefix, opts)
		pages++
		if pages == 1 {
			rev = l.Revision
		} else if l.Revision != rev {
			t.Fatalf("page %d is at revision %d, the first at %d", pages, l.Revision, rev)
		}
		if int64(len(l.Items)) > opts.Limit {
			t.Fatalf("page %d has %d items, limit %d", pages, len(l.Items), opts.Limit)
		}
		all = append(all, l.Items...)
		if l.Continue != "" && opts.Predicate.Empty() && int64(len(l.Items)) != opts.Limit {
			t.Fatalf("page %d has %d items and a continue token; want a full page of %d", pages, len(l.Items), opts.Limit)
		}
		switch {
		case !opts.Predicate.Empty():
			if l.RemainingItemCount != nil {
				t.Fatalf("page %d of a filtered list has RemainingItemCount %d; want nil", pages, *l.RemainingItemCount)
			}
		case l.Continue != "" && wantTotal >= 0:
			if l.RemainingItemCount == nil {
				t.Fatalf("page %d has no RemainingItemCount", pages)
			}
			if got, want := *l.RemainingItemCount, int64(wantTotal-len(all)); got != want {
				t.Fatalf("page %d: RemainingItemCount %d, want %d", pages, got, want)
			}
		case l.Continue == "":
			if l.RemainingItemCount != nil && *l.RemainingItemCount != 0 {
				t.Fatalf("last page: RemainingItemCount %d, want nil or 0", *l.RemainingItemCount)
			}
		}
		if l.Continue == "" {
			return all, rev, pages
		}
		if pages > 10000 {
			t.Fatal("List never ends")
		}
		if between != nil {
			between()
		}
		opts.Continue = l.Continue
		opts.Revision, opts.Match = 0, storage.MatchDefault
	}
}

func testListPages(t *testing.T, f Factory) {
	s, ctx := newStore(t, f), testContext(t)
	const n = 103
	var want []item
	for i := range n {
		key := fmt.Sprintf("/page/obj-%03d", i)
		v := value(fmt.Sprint(i), i)
		want = append(want, item{key, string(v), mustCreate(t, ctx, s, key, v)})
	}
	mustCreate(t, ctx, s, "/pagex/outside", value("x", 0))
	for _, tc := range []struct {
		limit     int64
		wantPages int
	}{
		{7, 15},
		{1, 103},
		{103, 1},
		{500, 1},
	} {
		t.Run(fmt.Sprintf("limit %d", tc.limit), func(t *testing.T) {
			all, _, pages := pageAll(t, ctx, s, "/page/", storage.ListOptions{Limit: tc.limit}, n, nil)
			sameItems(t, "paged list", items(all), want)
			if pages != tc.wantPages {
				t.Fatalf("%d pages, want %d", pages, tc.wantPages)
			}
		})
	}
	t.Run("pages of an old revision", func(t *testing.T) {
		rev := want[49].rev
		all, got, _ := pageAll(t, ctx, s, "/page/", storage.ListOptions{Limit: 7, Revision: rev, Match: storage.MatchExact}, 50, nil)
		if got != rev {
			t.Fatalf("pages at revision %d, want %d", got, rev)
		}
		sameItems(t, "paged list at an old revision", items(all), want[:50])
	})
}

func testListSnapshot(t *testing.T, f Factory) {
	s, ctx := newStore(t, f), testContext(t)
	const n = 120
	for i := range n {
		mustCreate(t, ctx, s, fmt.Sprintf("/snap/obj-%03d", i), value(fmt.Sprint(i), 0))
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var ops atomic.Int64
	var wg sync.WaitGroup
	writerErr := make(chan error, 3)
	for w := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for j := 0; j < 5000 && wctx.Err() == nil; j++ {
				key := fmt.Sprintf("/snap/obj-%03d", rng.IntN(n))
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = s.Delete(wctx, key, storage.DeleteOptions{})
					if errors.Is(err, storage.ErrNotFound) {
						err = nil
					}
				case 1:
					_, err = s.Create(wctx, fmt.Sprintf("/snap/new-%d-%04d", w, j), value("new", j))
				default:
					_, err = s.GuaranteedUpdate(wctx, key, storage.UpdateOptions{IgnoreNotFound: true}, func(cur storage.KeyValue) ([]byte, error) {
						o := decodeNoT(cur.Value)
						return value(key, o.N+1), nil
					})
				}
				if err != nil && wctx.Err() == nil {
					writerErr <- err
					return
				}
				ops.Add(1)
				// Pace the writers so that they outlast the pages on a
				// fast backend.
				time.Sleep(time.Millisecond)
			}
		})
	}
	// Make sure writes land between every two pages, so that the snapshot
	// is really tested against concurrent change.
	waitForWrites := func() {
		start := ops.Load()
		if !eventually(eventTimeout, func() bool { return ops.Load() > start+2 }) {
			t.Fatal("writers made no progress")
		}
	}
	waitForWrites()
	all, rev, pages := pageAll(t, ctx, s, "/snap/", storage.ListOptions{Limit: 7}, -1, waitForWrites)
	stop()
	wg.Wait()
	close(writerErr)
	for err := range writerErr {
		t.Fatalf("writer: %v", err)
	}
	if cur := currentRevision(t, ctx, s); cur <= rev {
		t.Fatalf("no write happened after the first page (revision %d, current %d)", rev, cur)
	}
	snapshot := mustList(t, ctx, s, "/snap/", storage.ListOptions{Revision: rev, Match: storage.MatchExact})
	sameItems(t, fmt.Sprintf("%d pages vs one list at revision %d", pages, rev), items(all), items(snapshot.Items))
	// The same pages again, now that nothing changes, must also report the
	// remaining counts of that snapshot.
	again, _, _ := pageAll(t, ctx, s, "/snap/", storage.ListOptions{Limit: 7, Revision: rev, Match: storage.MatchExact}, len(snapshot.Items), nil)
	sameItems(t, "pages at the snapshot revision", items(again), items(snapshot.Items))
}

func testListPredicate(t *testing.T, f Factory) {
	s, ctx := newStore(t, f), testContext(t)
	const n = 60
	var red, lateRed []item
	for i := range n {
		key := fmt.Sprintf("/pred/obj-%03d", i)
		color := "blue"
		if i%3 == 0 {
			color = "red"
		}
		late := "no"
		if i >= n-5 {
			late = "yes"
		}
		v := value(fmt.Sprint(i), i, "color", color, "late", late)
		rev := mustCreate(t, ctx, s, key, v)
		if color == "red" {
			red = append(red, item{key, string(v), rev})
		}
		if late == "yes" {
			lateRed = append(lateRed, item{key, string(v), rev})
		}
	}
	for _, tc := range []struct {
		name  string
		pred  storage.Predicate
		limit int64
		want  []item
	}{
		{"every third item, no limit", labelPredicate("color", "red"), 0, red},
		{"every third item, limit 3", labelPredicate("color", "red"), 3, red},
		{"every third item, limit 1", labelPredicate("color", "red"), 1, red},
		{"matches only at the end, limit 2", labelPredicate("late", "yes"), 2, lateRed},
		{"matches nothing, limit 4", labelPredicate("color", "green"), 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := storage.ListOptions{Predicate: tc.pred, Limit: tc.limit}
			if tc.limit == 0 {
				l := mustList(t, ctx, s, "/pred/", opts)
				sameItems(t, "filtered list", items(l.Items), tc.want)
				if l.Continue != "" || l.RemainingItemCount != nil {
					t.Fatalf("unpaged list has continue %q, remaining %v", l.Continue, l.RemainingItemCount)
				}
				return
			}
			first := mustList(t, ctx, s, "/pred/", opts)
			if wantFirst := min(int(tc.limit), len(tc.want)); len(first.Items) != wantFirst {
				t.Fatalf("first page has %d items; want %d (a page scans past items that do not match)", len(first.Items), wantFirst)
			}
			all, _, _ := pageAll(t, ctx, s, "/pred/", opts, -1, nil)
			sameItems(t, "filtered pages", items(all), tc.want)
		})
	}
	t.Run("field selector", func(t *testing.T) {
		p := storage.Predicate{Field: labelSelector{"metadata.name": "7"}, GetAttrs: getAttrs}
		l := mustList(t, ctx, s, "/pred/", storage.ListOptions{Predicate: p, Limit: 5})
		if len(l.Items) != 1 || !bytes.Contains(l.Items[0].Value, []byte(`"name":"7"`)) {
			t.Fatalf("field-selected list = %v", items(l.Items))
		}
	})
}
