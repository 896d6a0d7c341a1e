//go:build !apikit_noembed

package embedded

import (
	"context"
	"fmt"
	"testing"

	"github.com/apikit-dev/apikit/storage"
)

// The numbers to compare with storage/memory's benchmarks: the same
// operations through etcd3 on an embedded etcd, fsync on.
func BenchmarkEmbedded(b *testing.B) {
	e := start(b, Config{DataDir: b.TempDir()})
	s := e.Storage()
	defer s.Close()
	ctx := context.Background()
	v := []byte(fmt.Sprintf(`{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"f","namespace":"default","uid":"0d6d4e9c-3c1f-4bde-9d0b-000000000001"},"spec":{"reference":"%0300d"}}`, 0))
	for i := range 1000 {
		if _, err := s.Create(ctx, fmt.Sprintf("/list/%06d", i), v); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Create", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := s.Create(ctx, fmt.Sprintf("/create/%09d", i), v); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, "/list/000500", storage.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("List1000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, err := s.List(ctx, "/list/", storage.ListOptions{})
			if err != nil || len(l.Items) != 1000 {
				b.Fatal(len(l.Items), err)
			}
		}
	})
	b.Run("GuaranteedUpdate", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			if _, err := s.GuaranteedUpdate(ctx, "/list/000001", storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) {
				return []byte(fmt.Sprint(n)), nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
