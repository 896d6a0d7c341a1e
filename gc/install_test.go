package gc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/gc"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// remoteSource is a server.ResourceSource whose resources a test changes
// while the collector runs.
type remoteSource struct {
	mu       sync.Mutex
	res      []registry.Resource
	watchers []func()
}

func (s *remoteSource) RemoteResources() ([]registry.Resource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res, nil
}

func (s *remoteSource) WatchRemoteResources(f func()) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers = append(s.watchers, f)
	return func() {}
}

func (s *remoteSource) set(res ...registry.Resource) {
	s.mu.Lock()
	s.res = res
	ws := s.watchers
	s.mu.Unlock()
	for _, f := range ws {
		f()
	}
}

// TestInstallFollowsRemoteResources: the collector Install runs on a
// server also collects the resources of a remote source (an aggregator's
// remote APIServices), those that come while it runs included: a remote
// dependent of an owner served by the server goes with it.
func TestInstallFollowsRemoteResources(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	store := func(group, resource, kind string, namespaced bool) *registry.Store[*thing] {
		return registry.MustNewStore(registry.Options[*thing]{
			Resource: meta.GroupResource{Group: group, Resource: resource}, Kind: kind, NamespaceScoped: namespaced,
			StorageVersion: "v1", Strategy: registry.DefaultStrategy[*thing]{}, Storage: mem,
		})
	}
	roots := store("example.com", "roots", "Root", false)
	remote := store("remote.example.com", "things", "Thing", true)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.NewConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.SecureServing.Listener = ln
	cfg.Storage = storage.Shared(mem)
	cfg.GarbageCollection = true
	cfg.ShutdownTimeout = 5 * time.Second
	c, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := c.New("local", server.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.InstallAPIGroup(server.NewAPIGroupInfo("example.com").AddVersion("v1", registry.Serve(roots))); err != nil {
		t.Fatal(err)
	}
	src := &remoteSource{}
	if err := gc.Install(srv, cfg.Logger, src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	prepared := srv.PrepareRun()
	go func() { done <- prepared.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// The remote resource comes after the start, as an APIService
	// becomes available.
	eventually(t, "the collector watching the remote source", func() error {
		src.mu.Lock()
		defer src.mu.Unlock()
		if len(src.watchers) == 0 {
			return fmt.Errorf("no watcher yet")
		}
		return nil
	})
	src.set(registry.Serve(remote))

	owner, err := roots.Create(ctx, "", &thing{ObjectMeta: meta.ObjectMeta{Name: "owner"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := &thing{ObjectMeta: meta.ObjectMeta{Name: "dep", Namespace: "ns",
		OwnerReferences: []meta.OwnerReference{{APIVersion: "example.com/v1", Kind: "Root", Name: "owner", UID: owner.UID}}}}
	if _, err := remote.Create(ctx, "ns", dep, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A dangling reference to a remote owner is collected too: the
	// remote kind is the collector's.
	orphan := &thing{ObjectMeta: meta.ObjectMeta{Name: "dangling", Namespace: "ns",
		OwnerReferences: []meta.OwnerReference{{APIVersion: "remote.example.com/v1", Kind: "Thing", Name: "nobody", UID: "u-nobody"}}}}
	if _, err := remote.Create(ctx, "ns", orphan, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := roots.Delete(ctx, "", "owner", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dep", "dangling"} {
		eventually(t, "the remote "+name+" collected", func() error {
			if _, _, err := remote.Get(ctx, "ns", name, meta.GetOptions{}); !meta.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
	}
}
