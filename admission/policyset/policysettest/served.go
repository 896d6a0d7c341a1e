// Package policysettest serves the resources the tests of the admission
// policy plugins read params and namespaces from: a policyset.Resources
// over in-memory stores.
package policysettest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// The kinds Served serves.
var (
	ConfigMapKind = meta.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	RootKind      = meta.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Root"}
	NamespaceKind = meta.GroupVersionKind{Version: "v1", Kind: "Namespace"}
)

// Served is a server's resources: configmaps (namespaced), roots
// (cluster-scoped) and, when Namespaces is set, namespaces. It
// implements policyset.Resources.
type Served struct {
	ConfigMaps *registry.Store[*configmaps.ConfigMap]
	Roots      *registry.Store[*meta.PartialObjectMetadata]
	Namespaces *registry.Store[*namespaces.Namespace]
	// HideRoots stops serving roots (a CRD deleted) while set.
	HideRoots atomic.Bool
}

// New returns the resources over memory storage closed when t ends, with
// namespaces when withNamespaces.
func New(t testing.TB, withNamespaces bool) *Served {
	t.Helper()
	mem := memory.New(memory.WithBookmarkInterval(20*time.Millisecond), memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	f := storage.Shared(mem)
	cms, err := configmaps.New(f)
	if err != nil {
		t.Fatal(err)
	}
	s := &Served{ConfigMaps: cms, Roots: registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
		Resource: meta.GroupResource{Group: "example.com", Resource: "roots"}, Kind: "Root", StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
	})}
	if withNamespaces {
		if s.Namespaces, err = namespaces.New(f); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// ResourceFor implements policyset.Resources.
func (s *Served) ResourceFor(k meta.GroupVersionKind) (registry.Resource, bool) {
	switch {
	case k == ConfigMapKind:
		return registry.Serve(s.ConfigMaps), true
	case k == RootKind && !s.HideRoots.Load():
		return registry.Serve(s.Roots), true
	case k == NamespaceKind && s.Namespaces != nil:
		return registry.Serve(s.Namespaces), true
	}
	return nil, false
}

// ResourceOf implements policyset.Resources.
func (s *Served) ResourceOf(gvr meta.GroupVersionResource) (registry.Resource, bool) {
	for _, k := range []meta.GroupVersionKind{ConfigMapKind, RootKind, NamespaceKind} {
		if r, ok := s.ResourceFor(k); ok && r.Info().Resource == gvr.Resource && r.Info().GroupVersion == gvr.GroupVersion() {
			return r, true
		}
	}
	return nil, false
}

// ConfigMap creates a configmap.
func (s *Served) ConfigMap(t testing.TB, ns, name string, labels, data map[string]string) {
	t.Helper()
	if _, err := s.ConfigMaps.Create(context.Background(), ns, &configmaps.ConfigMap{
		ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels}, Data: data}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// SetConfigMapData replaces a configmap's data.
func (s *Served) SetConfigMapData(t testing.TB, ns, name string, data map[string]string) {
	t.Helper()
	if _, _, err := s.ConfigMaps.Update(context.Background(), ns, name, func(_ context.Context, cur *configmaps.ConfigMap) (*configmaps.ConfigMap, error) {
		cur.Data = data
		return cur, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Namespace creates a namespace; Served must serve namespaces.
func (s *Served) Namespace(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	if _, err := s.Namespaces.Create(context.Background(), "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels}},
		registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Eventually polls cond with a generous deadline (the machine may be
// loaded) and fails t with its last error.
func Eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
