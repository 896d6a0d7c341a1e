package etcd3

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

const testBookmarkInterval = 200 * time.Millisecond

func newClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: ZapLogger(nil, nil)})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Factory returns a storagetest.Factory whose stores share client, each
// under a prefix of its own.
func factory(client *clientv3.Client) storagetest.Factory {
	var n atomic.Int64
	return storagetest.Factory{
		New: func(*testing.T) storage.Interface {
			return New(client,
				WithPrefix(fmt.Sprintf("/registry-%d", n.Add(1))),
				WithBookmarkInterval(testBookmarkInterval),
				WithMaxRevisionWait(time.Second))
		},
		Compact: func(ctx context.Context, _ storage.Interface, rev int64) error {
			_, err := client.Compact(ctx, rev)
			return err
		},
		BookmarkInterval: testBookmarkInterval,
	}
}

func TestConformance(t *testing.T) {
	client := newClient(t, etcdtest.Start(t))
	start := time.Now()
	storagetest.Run(t, factory(client))
	t.Logf("conformance suite took %v", time.Since(start).Round(time.Millisecond))
}
