//go:build !apikit_noembed

package embedded_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/embedded"
	"github.com/apikit-dev/apikit/storage/etcd3"
)

func ExampleStart() {
	dir, err := os.MkdirTemp("", "apikit-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	e, err := embedded.Start(ctx, embedded.Config{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	s := e.Storage(etcd3.WithPrefix("/registry"))
	defer s.Close()
	if _, err := s.Create(ctx, "/flunders/default/a", []byte(`{"metadata":{"name":"a"}}`)); err != nil {
		log.Fatal(err)
	}
	kv, err := s.Get(ctx, "/flunders/default/a", storage.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(kv.Value))
	// Output: {"metadata":{"name":"a"}}
}
