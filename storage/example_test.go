package storage_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// A storage.Interface keeps bytes under keys, each with the revision that
// wrote it. A watch from a revision delivers every later change in order;
// a watch from a revision compaction removed fails with ErrExpired, which
// the registry turns into 410 Gone.
func Example() {
	ctx := context.Background()
	mem := memory.New()
	defer mem.Close()
	var s storage.Interface = mem

	root := storage.KeyRoot(meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"})
	key := storage.Key(root, "default", "a")
	fmt.Println("key:", key)

	before, _ := s.CurrentRevision(ctx)
	created, _ := s.Create(ctx, key, []byte(`{"size":1}`))
	_, _ = s.GuaranteedUpdate(ctx, key, storage.UpdateOptions{}, func(cur storage.KeyValue) ([]byte, error) {
		return []byte(`{"size":2}`), nil
	})

	w, _ := s.Watch(ctx, storage.KeyPrefix(root, "default"), storage.WatchOptions{Revision: created})
	ev := <-w.ResultChan()
	fmt.Println(ev.Type, ev.Key, string(ev.Value), "revision", ev.Revision-created, "after the create")
	w.Stop()

	latest, _ := s.CurrentRevision(ctx)
	_ = mem.Compact(latest)
	// The error comes as the watch's one event (etcd answers so too).
	old, err := s.Watch(ctx, storage.KeyPrefix(root, ""), storage.WatchOptions{Revision: before})
	if err == nil {
		ev := <-old.ResultChan()
		err = ev.Err
		old.Stop()
	}
	fmt.Println("watch from a compacted revision expired:", errors.Is(err, storage.ErrExpired))
	// Output:
	// key: /wardle.example.com/flunders/default/a
	// MODIFIED /wardle.example.com/flunders/default/a {"size":2} revision 1 after the create
	// watch from a compacted revision expired: true
}
