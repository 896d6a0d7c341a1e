package storagetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// Factory makes the stores the suite tests.
type Factory struct {
	// New returns a fresh, empty store. The suite closes it when the test
	// that asked for it ends. Stores may share one backend (one etcd, a key
	// prefix per store) as long as their keys never overlap.
	New func(t *testing.T) storage.Interface
	// Compact discards the history of s before rev, as the backend's
	// compactor would: afterwards reads at revisions older than rev, and
	// watches that would need them, fail with storage.ErrExpired.
	Compact func(ctx context.Context, s storage.Interface, rev int64) error
	// BookmarkInterval is how often the stores New returns send a Bookmark
	// to a watch that asked for them. Set it short (a few hundred
	// milliseconds): the suite waits for a bookmark up to a few intervals.
	BookmarkInterval time.Duration
	// SlowWatchers, when set, returns a fresh store whose watches fall
	// behind (and are closed) once their consumer leaves about n events
	// unread, and that still has every change of a run of 2n writes when
	// the client watches again from the last revision it got. Stores whose
	// watches never fall behind (an etcd watch waits for its consumer)
	// leave it nil.
	SlowWatchers func(t *testing.T) (s storage.Interface, n int)
	// MaxObjectBytes is the object size limit of the stores New returns;
	// zero means storage.DefaultMaxObjectBytes, every backend's default.
	MaxObjectBytes int64
}

// Run runs the conformance suite against the stores f makes.
func Run(t *testing.T, f Factory) {
	if f.New == nil || f.Compact == nil || f.BookmarkInterval <= 0 {
		t.Fatal("storagetest: Factory needs New, Compact and a BookmarkInterval")
	}
	t.Run("Create", func(t *testing.T) { testCreate(t, f) })
	t.Run("Get", func(t *testing.T) { testGet(t, f) })
	t.Run("GuaranteedUpdate", func(t *testing.T) { testGuaranteedUpdate(t, f) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, f) })
	t.Run("List", func(t *testing.T) { testList(t, f) })
	t.Run("Watch", func(t *testing.T) { testWatch(t, f) })
	t.Run("CurrentRevision", func(t *testing.T) { testCurrentRevision(t, f) })
	t.Run("ObjectSize", func(t *testing.T) { testObjectSize(t, f) })
}

// eventTimeout bounds every wait for an event that must come. It is
// generous because the suite runs under -race on two cores against a real
// etcd.
const eventTimeout = 10 * time.Second

// maxRevisionWait bounds how long a read of a future revision may wait
// before it fails: kube-apiserver waits 3 s; the suite allows some slack.
const maxRevisionWait = 5 * time.Second

func newStore(t *testing.T, f Factory) storage.Interface {
	t.Helper()
	s := f.New(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// object is the shape of the test values: just enough of a Kubernetes
// object for uid preconditions and label selectors.
type object struct {
	Metadata struct {
		Name   string            `json:"name"`
		UID    string            `json:"uid,omitempty"`
		Labels map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	N int `json:"n"`
}

func value(name string, n int, labels ...string) []byte {
	return valueUID(name, "uid-"+name, n, labels...)
}

func valueUID(name, uid string, n int, labels ...string) []byte {
	var o object
	o.Metadata.Name, o.Metadata.UID, o.N = name, uid, n
	if len(labels) > 0 {
		o.Metadata.Labels = map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			o.Metadata.Labels[labels[i]] = labels[i+1]
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

func decode(t testing.TB, b []byte) object {
	t.Helper()
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return o
}

// uidPrecondition refuses unless the stored object has the given uid, the
// way the registry expresses metadata.uid preconditions.
func uidPrecondition(uid string) func(storage.KeyValue) error {
	return func(cur storage.KeyValue) error {
		var o object
		if err := json.Unmarshal(cur.Value, &o); err != nil {
			return err
		}
		if o.Metadata.UID != uid {
			return fmt.Errorf("precondition failed: uid in precondition %s, uid in object %s", uid, o.Metadata.UID)
		}
		return nil
	}
}

// labelSelector is a minimal equality-based meta.Selector.
type labelSelector map[string]string

// Matches implements meta.Selector.
func (s labelSelector) Matches(set meta.Set) bool {
	for k, v := range s {
		if got, ok := set[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Empty implements meta.Selector.
func (s labelSelector) Empty() bool { return len(s) == 0 }

// String implements meta.Selector.
func (s labelSelector) String() string {
	var parts []string
	for k, v := range s {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// RequiresExactMatch implements meta.Selector.
func (s labelSelector) RequiresExactMatch(key string) (string, bool) {
	v, ok := s[key]
	return v, ok
}

func getAttrs(b []byte) (meta.Set, meta.Set, error) {
	var o object
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, nil, err
	}
	return meta.Set(o.Metadata.Labels), meta.Set{"metadata.name": o.Metadata.Name}, nil
}

func labelPredicate(key, val string) storage.Predicate {
	return storage.Predicate{Label: labelSelector{key: val}, GetAttrs: getAttrs}
}

func mustCreate(t testing.TB, ctx context.Context, s storage.Interface, key string, v []byte) int64 {
	t.Helper()
	rev, err := s.Create(ctx, key, v)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	if rev <= 0 {
		t.Fatalf("Create(%q) returned revision %d", key, rev)
	}
	return rev
}

func mustUpdate(t testing.TB, ctx context.Context, s storage.Interface, key string, v []byte) storage.KeyValue {
	t.Helper()
	kv, err := s.GuaranteedUpdate(ctx, key, storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) { return v, nil })
	if err != nil {
		t.Fatalf("GuaranteedUpdate(%q): %v", key, err)
	}
	return kv
}

func mustDelete(t testing.TB, ctx context.Context, s storage.Interface, key string) storage.KeyValue {
	t.Helper()
	kv, err := s.Delete(ctx, key, storage.DeleteOptions{})
	if err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
	return kv
}

func mustGet(t testing.TB, ctx context.Context, s storage.Interface, key string) storage.KeyValue {
	t.Helper()
	kv, err := s.Get(ctx, key, storage.GetOptions{})
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return kv
}

func currentRevision(t testing.TB, ctx context.Context, s storage.Interface) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	return rev
}

func wantCode(t testing.TB, what string, err error, want *storage.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want one with code %d (%v)", what, err, want.Code, want)
	}
}

func sameKV(t testing.TB, what string, got storage.KeyValue, key string, val []byte, rev int64) {
	t.Helper()
	if got.Key != key || !bytes.Equal(got.Value, val) || (rev != 0 && got.Revision != rev) {
		t.Fatalf("%s: got {%q %s rev %d}, want {%q %s rev %d}", what, got.Key, got.Value, got.Revision, key, val, rev)
	}
}

// backendGoroutines counts goroutines running code of a storage backend
// (any apikit storage package but this suite), for leak checks: goroutines
// of etcd's client or server are not the backend's to stop.
func backendGoroutines() int {
	return Goroutines(func(g string) bool {
		for _, line := range strings.Split(g, "\n") {
			line = strings.TrimPrefix(line, "created by ")
			if strings.HasPrefix(line, "github.com/apikit-dev/apikit/storage") &&
				!strings.HasPrefix(line, "github.com/apikit-dev/apikit/storage/storagetest.") {
				return true
			}
		}
		return false
	})
}

// eventually polls cond until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
