package informer_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Owner is an example resource: an owner of something, by team.
type Owner struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Team            string `json:"team,omitempty"`
}

// A controller in a server follows a resource with an informer: handlers
// for changes, a local store with an index for reads, and Synced for
// "seen everything once". Run stops with its context.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	mem := memory.New()
	defer mem.Close()
	owners, _ := registry.NewStore(registry.Options[*Owner]{
		Resource: meta.GroupResource{Group: "example.com", Resource: "owners"},
		Kind:     "Owner", StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*Owner]{}, Storage: mem,
	})
	_, _ = owners.Create(ctx, "", &Owner{ObjectMeta: meta.ObjectMeta{Name: "alice"}, Team: "storage"}, registry.WriteOptions{})

	deleted := make(chan string)
	inf := informer.New(informer.Config[*Owner]{
		Source: owners,
		Name:   "owners",
		Handlers: informer.Handlers[*Owner]{
			OnAdd:    func(o *Owner) { fmt.Println("added", o.Name, "of", o.Team) },
			OnDelete: func(o *Owner) { deleted <- o.Name },
		},
		Indexers: map[string]informer.IndexFunc[*Owner]{
			"team": func(o *Owner) []string { return []string{o.Team} },
		},
	})
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if err := inf.WaitForSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("synced")

	_, _ = owners.Create(ctx, "", &Owner{ObjectMeta: meta.ObjectMeta{Name: "bob"}, Team: "storage"}, registry.WriteOptions{})
	_, _, _ = owners.Delete(ctx, "", "alice", registry.DeleteOptions{})
	fmt.Println("deleted", <-deleted)
	for _, o := range inf.ByIndex("team", "storage") {
		fmt.Println("team storage:", o.Name)
	}
	// Output:
	// added alice of storage
	// synced
	// added bob of storage
	// deleted alice
	// team storage: bob
}
