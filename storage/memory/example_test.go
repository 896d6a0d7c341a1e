package memory_test

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func ExampleNew() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()

	from, _ := s.CurrentRevision(ctx)
	w, _ := s.Watch(ctx, "/flunders/", storage.WatchOptions{Revision: from})
	defer w.Stop()

	s.Create(ctx, "/flunders/default/a", []byte(`{"metadata":{"name":"a"}}`))
	s.GuaranteedUpdate(ctx, "/flunders/default/a", storage.UpdateOptions{}, func(cur storage.KeyValue) ([]byte, error) {
		return []byte(`{"metadata":{"name":"a"},"spec":{"size":2}}`), nil
	})
	l, _ := s.List(ctx, "/flunders/", storage.ListOptions{Limit: 10})
	fmt.Println(len(l.Items), string(l.Items[0].Value))

	for range 2 {
		ev := <-w.ResultChan()
		fmt.Println(ev.Type, ev.Key, ev.Revision-from)
	}
	// Output:
	// 1 {"metadata":{"name":"a"},"spec":{"size":2}}
	// ADDED /flunders/default/a 1
	// MODIFIED /flunders/default/a 2
}
