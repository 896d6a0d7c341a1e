package backend_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/backend"
)

func TestMemory(t *testing.T) {
	ctx := context.Background()
	st := backend.New(backend.Config{Backend: backend.Memory, MaxObjectBytes: 64,
		WatchCache: storage.WatchCacheConfig{Enabled: true}})
	if err := st.Check(httptest.NewRequest("GET", "/readyz", nil)); err == nil {
		t.Error("Check passes before the storage is open")
	}
	widgets := meta.GroupResource{Group: "example.com", Resource: "widgets"}
	s, err := st.For(widgets)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(storage.Rooted); ok {
		t.Errorf("the memory backend got a watch cache (%T)", s)
	}
	if _, err := s.Create(ctx, storage.Key(storage.KeyRoot(widgets), "ns", "a"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, storage.Key(storage.KeyRoot(widgets), "ns", "big"), make([]byte, 65)); err == nil {
		t.Error("a value over MaxObjectBytes was stored")
	}
	if err := st.Check(httptest.NewRequest("GET", "/readyz", nil)); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.For(widgets); err == nil {
		t.Error("For after Close")
	}
}

func TestUnknownBackend(t *testing.T) {
	_, err := backend.New(backend.Config{Backend: "floppy"}).For(meta.GroupResource{Resource: "pods"})
	if err == nil || !strings.Contains(err.Error(), `unknown storage backend "floppy"`) {
		t.Errorf("For on an unknown backend: %v", err)
	}
}
