package options

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
)

// TestStorageWatchCache checks which resources the storage puts a watch
// cache in front of, as --watch-cache and --watch-cache-sizes say, and
// that Close stops the caches.
func TestStorageWatchCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd process")
	}
	endpoints := etcdtest.Start(t)
	widgets := meta.GroupResource{Group: "test.example.com", Resource: "widgets"}
	gadgets := meta.GroupResource{Group: "test.example.com", Resource: "gadgets"}
	for _, tc := range []struct {
		name   string
		args   []string
		cached map[meta.GroupResource]bool
	}{
		{"default: every resource", []string{"--etcd-servers=" + endpoints[0]},
			map[meta.GroupResource]bool{widgets: true, gadgets: true, {Group: "test.example.com"}: false}},
		{"a size of 0 turns one off", []string{"--etcd-servers=" + endpoints[0], "--watch-cache-sizes=gadgets.test.example.com#0"},
			map[meta.GroupResource]bool{widgets: true, gadgets: false}},
		{"--watch-cache=false", []string{"--etcd-servers=" + endpoints[0], "--watch-cache=false"},
			map[meta.GroupResource]bool{widgets: false, gadgets: false}},
		{"the memory backend has none", []string{"--storage-backend=memory"},
			map[meta.GroupResource]bool{widgets: false, gadgets: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, tc.args...)
			if err := o.Etcd.CompleteWatchCache(); err != nil {
				t.Fatal(err)
			}
			st := newStorage(o.Etcd, nil, o.Logger)
			var caches []*cacher.Cacher
			for r, want := range tc.cached {
				s, err := st.For(r)
				if err != nil {
					t.Fatalf("For(%v): %v", r, err)
				}
				c, ok := s.(*cacher.Cacher)
				if ok != want {
					t.Fatalf("For(%v) = %T; want a cache: %v", r, s, want)
				}
				if ok {
					if c.Prefix() != storage.KeyRoot(r)+"/" {
						t.Fatalf("the cache of %v holds %q", r, c.Prefix())
					}
					caches = append(caches, c)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, c := range caches {
				if _, err := c.Get(context.Background(), c.Prefix()+"x", storage.GetOptions{}); !errors.Is(err, storage.ErrUnavailable) {
					t.Fatalf("a cache still serves after Close: %v", err)
				}
			}
		})
	}
}

// TestStorageMaxObjectBytes checks that --storage-max-object-bytes is the
// object size limit of every backend, and that the default is
// storage.DefaultMaxObjectBytes.
func TestStorageMaxObjectBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	endpoints := etcdtest.Start(t)
	for _, tc := range []struct {
		name  string
		args  []string
		limit int64
	}{
		{"memory, default", []string{"--storage-backend=memory"}, storage.DefaultMaxObjectBytes},
		{"memory", []string{"--storage-backend=memory", "--storage-max-object-bytes=2048"}, 2048},
		{"embedded", []string{"--storage-backend=embedded", "--storage-max-object-bytes=2048"}, 2048},
		{"etcd3", []string{"--etcd-servers=" + endpoints[0], "--etcd-prefix=/max-object", "--storage-max-object-bytes=2048"}, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, tc.args...)
			st := newStorage(o.Etcd, nil, o.Logger)
			t.Cleanup(func() { st.Close() })
			s, err := st.For(meta.GroupResource{Group: "test.example.com", Resource: "widgets"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, err = s.Create(ctx, "/test.example.com/widgets/big", make([]byte, tc.limit+1))
			var se *storage.Error
			if !errors.As(err, &se) || se.Code != storage.CodeTooLarge || se.Limit != tc.limit {
				t.Fatalf("Create of %d bytes: %v, want ErrTooLarge naming limit %d", tc.limit+1, err, tc.limit)
			}
			if _, err := s.Create(ctx, "/test.example.com/widgets/fits", make([]byte, tc.limit)); err != nil {
				t.Fatalf("Create of %d bytes: %v", tc.limit, err)
			}
		})
	}
}

func TestFlagAttemptTimeout(t *testing.T) {
	for flag, want := range map[time.Duration]time.Duration{0: -1, time.Second: time.Second, 250 * time.Millisecond: 250 * time.Millisecond} {
		if got := flagAttemptTimeout(flag); got != want {
			t.Errorf("--etcd-attempt-timeout=%v gives the backend %v, want %v", flag, got, want)
		}
	}
}
