package cacher

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/etcd3"
	"github.com/apikit-dev/apikit/storage/memory"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

const (
	testBookmarkInterval = 200 * time.Millisecond
	testMaxRevisionWait  = time.Second
)

// testCacher puts a cache of every key in front of backend, and waits until
// it serves reads. The test closes both, the cache first.
func testCacher(t testing.TB, backend storage.Interface, opts ...Option) *Cacher {
	t.Helper()
	t.Cleanup(func() { backend.Close() })
	opts = append([]Option{WithBookmarkInterval(testBookmarkInterval), WithMaxRevisionWait(testMaxRevisionWait)}, opts...)
	c := New(backend, "/", opts...)
	t.Cleanup(func() {
		c.Close()
		if n := c.delegated.Load(); n > 0 {
			t.Logf("%d reads went to the backend", n)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return c
}

// slowCacher is a cache whose stalled watchers are closed once their
// consumer leaves n changes unread: those lagBound allows, the one it waits
// to send and its channel's buffer. Its window keeps twice as many, so that
// the closed watch resumes.
func slowCacher(t *testing.T, backend storage.Interface) (storage.Interface, int) {
	const window = 400
	c := testCacher(t, backend, WithCapacity(window))
	return c, int(lagBound(window)) + 1 + outBuffer
}

func TestConformanceMemory(t *testing.T) {
	storagetest.Run(t, storagetest.Factory{
		New: func(t *testing.T) storage.Interface {
			return testCacher(t, memory.New(memory.WithBookmarkInterval(testBookmarkInterval), memory.WithMaxRevisionWait(testMaxRevisionWait)))
		},
		Compact: func(ctx context.Context, s storage.Interface, rev int64) error {
			c := s.(*Cacher)
			if err := c.backend.(*memory.Store).Compact(rev); err != nil {
				return err
			}
			return c.Compact(ctx, rev)
		},
		BookmarkInterval: testBookmarkInterval,
		SlowWatchers: func(t *testing.T) (storage.Interface, int) {
			return slowCacher(t, memory.New(memory.WithBookmarkInterval(testBookmarkInterval), memory.WithMaxRevisionWait(testMaxRevisionWait)))
		},
	})
}

func TestConformanceEtcd(t *testing.T) {
	client, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.Start(t), DialTimeout: 10 * time.Second, Logger: etcd3.ZapLogger(nil, nil)})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	var n atomic.Int64
	storagetest.Run(t, storagetest.Factory{
		New: func(t *testing.T) storage.Interface {
			return testCacher(t, etcd3.New(client,
				etcd3.WithPrefix(fmt.Sprintf("/registry-%d", n.Add(1))),
				etcd3.WithBookmarkInterval(testBookmarkInterval),
				etcd3.WithMaxRevisionWait(testMaxRevisionWait)))
		},
		Compact: func(ctx context.Context, s storage.Interface, rev int64) error {
			if _, err := client.Compact(ctx, rev); err != nil {
				return err
			}
			return s.(*Cacher).Compact(ctx, rev)
		},
		BookmarkInterval: testBookmarkInterval,
		SlowWatchers: func(t *testing.T) (storage.Interface, int) {
			return slowCacher(t, etcd3.New(client,
				etcd3.WithPrefix(fmt.Sprintf("/registry-%d", n.Add(1))),
				etcd3.WithBookmarkInterval(testBookmarkInterval),
				etcd3.WithMaxRevisionWait(testMaxRevisionWait)))
		},
	})
}
