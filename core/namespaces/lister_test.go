package namespaces_test

import (
	"context"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// TestLister: labels come from the informer once it runs, a namespace
// created a moment ago is found (live, if the informer has not seen it
// yet), a missing one is kube's NotFound, and a label change reaches the
// lookup.
func TestLister(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := newStore(t)
	create := func(name string, labels map[string]string) {
		t.Helper()
		if _, err := store.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l := namespaces.NewLister(store)
	// Not running yet: read live.
	create("before", map[string]string{"team": "a"})
	if got, err := l.NamespaceLabels(ctx, "before"); err != nil || got["team"] != "a" {
		t.Fatalf("before Run: %v %v", got, err)
	}
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// Created while the informer runs: found at once, whichever path.
	create("fresh", map[string]string{"team": "b"})
	if got, err := l.NamespaceLabels(ctx, "fresh"); err != nil || got["team"] != "b" {
		t.Errorf("just created: %v %v", got, err)
	}
	if _, err := l.NamespaceLabels(ctx, "missing"); !meta.IsNotFound(err) || err.Error() != `namespaces "missing" not found` {
		t.Errorf("missing: %v", err)
	}
	// A label change is seen once the informer has it.
	if _, _, err := store.Update(ctx, "", "before", func(_ context.Context, ns *namespaces.Namespace) (*namespaces.Namespace, error) {
		ns.Labels = map[string]string{"team": "c"}
		return ns, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := l.NamespaceLabels(ctx, "before")
		if err == nil && got["team"] == "c" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the label change never arrived: %v %v", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
