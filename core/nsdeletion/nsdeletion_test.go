package nsdeletion_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/core/nsdeletion"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// stores returns the namespaces and configmaps stores over one memory
// backend, which it also returns for the test's own stores.
func stores(t *testing.T) (*registry.Store[*namespaces.Namespace], *registry.Store[*configmaps.ConfigMap], *memory.Store) {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	f := storage.Shared(mem)
	nss, err := namespaces.New(f)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := configmaps.New(f)
	if err != nil {
		t.Fatal(err)
	}
	return nss, cms, mem
}

// eventually polls cond until it holds, failing the test with what cond
// last saw after 30 s.
func eventually(t *testing.T, what string, cond func() (bool, any)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %s; saw %v", what, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDeletesContentThenNamespace(t *testing.T) {
	nss, cms, _ := stores(t)
	ctx, cancel := context.WithCancel(context.Background())
	for _, n := range []string{"doomed", "kept"} {
		if _, err := nss.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: n}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Create(ctx, n, &configmaps.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "plain", Namespace: n}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Create(ctx, "doomed", &configmaps.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "held", Namespace: "doomed", Finalizers: []string{"example.com/hold"}}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		nsdeletion.Run(ctx, nsdeletion.Config{Namespaces: nss, Content: []nsdeletion.Content{nsdeletion.Store(cms)}, Resync: 50 * time.Millisecond})
	}()
	defer func() { cancel(); wg.Wait() }()
	if _, _, err := nss.Delete(ctx, "", "doomed", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]namespaces.NamespaceCondition{
		"NamespaceDeletionDiscoveryFailure":           {Status: "False", Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		"NamespaceDeletionGroupVersionParsingFailure": {Status: "False", Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
		"NamespaceDeletionContentFailure":             {Status: "False", Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		"NamespaceContentRemaining":                   {Status: "True", Reason: "SomeResourcesRemain", Message: "Some resources are remaining: configmaps has 1 resource instances"},
		"NamespaceFinalizersRemaining":                {Status: "True", Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"},
	}
	eventually(t, "the held namespace's conditions", func() (bool, any) {
		ns, _, err := nss.Get(ctx, "", "doomed", meta.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(ns.Status.Conditions) != len(want) {
			return false, ns.Status.Conditions
		}
		for _, c := range ns.Status.Conditions {
			w, ok := want[c.Type]
			if !ok || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message || c.LastTransitionTime == nil {
				return false, ns.Status.Conditions
			}
		}
		return ns.Status.Phase == namespaces.PhaseTerminating, ns.Status.Phase
	})
	if _, _, err := cms.Get(ctx, "doomed", "plain", meta.GetOptions{}); !meta.IsNotFound(err) {
		t.Errorf("configmap doomed/plain: %v, want deleted", err)
	}
	if _, _, err := cms.Update(ctx, "doomed", "held", func(_ context.Context, cm *configmaps.ConfigMap) (*configmaps.ConfigMap, error) {
		cm.Finalizers = nil
		return cm, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace gone", func() (bool, any) {
		_, _, err := nss.Get(ctx, "", "doomed", meta.GetOptions{})
		return meta.IsNotFound(err), err
	})
	if _, _, err := cms.Get(ctx, "kept", "plain", meta.GetOptions{}); err != nil {
		t.Errorf("another namespace's configmap: %v", err)
	}
}

// TestDiscoveredContent: resources Discover finds on a pass are emptied
// too (a custom resource served after the start); while it reports an
// error the namespace stays, with kube's DiscoveryFailed condition.
func TestDiscoveredContent(t *testing.T) {
	nss, cms, mem := stores(t)
	widgets := registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
		Resource: meta.GroupResource{Group: "crd.example.com", Resource: "widgets"}, Kind: "Widget", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
	})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := nss.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "doomed"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, "doomed", &configmaps.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "cm", Namespace: "doomed"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.Create(ctx, "doomed", &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{Name: "w", Namespace: "doomed"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	found, discoveryErr := []nsdeletion.Content{nsdeletion.Store(cms)}, errors.New("widgets not yet served")
	var wg sync.WaitGroup
	wg.Go(func() {
		nsdeletion.Run(ctx, nsdeletion.Config{Namespaces: nss, Resync: 50 * time.Millisecond,
			Discover: func() ([]nsdeletion.Content, error) {
				mu.Lock()
				defer mu.Unlock()
				return found, discoveryErr
			}})
	})
	defer func() { cancel(); wg.Wait() }()
	if _, _, err := nss.Delete(ctx, "", "doomed", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the discovery failure", func() (bool, any) {
		ns, _, err := nss.Get(ctx, "", "doomed", meta.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == "NamespaceDeletionDiscoveryFailure" {
				return c.Status == "True" && c.Reason == "DiscoveryFailed" && c.Message == "widgets not yet served", c
			}
		}
		return false, ns.Status.Conditions
	})
	if _, _, err := cms.Get(ctx, "doomed", "cm", meta.GetOptions{}); !meta.IsNotFound(err) {
		t.Errorf("configmap: %v, want deleted", err)
	}
	if _, _, err := widgets.Get(ctx, "doomed", "w", meta.GetOptions{}); err != nil {
		t.Errorf("widget: %v, want kept (not discovered yet)", err)
	}
	if _, _, err := nss.Get(ctx, "", "doomed", meta.GetOptions{}); err != nil {
		t.Fatalf("the namespace went while discovery failed: %v", err)
	}

	mu.Lock()
	found, discoveryErr = []nsdeletion.Content{nsdeletion.Store(cms), nsdeletion.Store(widgets)}, nil
	mu.Unlock()
	eventually(t, "the namespace gone", func() (bool, any) {
		_, _, err := nss.Get(ctx, "", "doomed", meta.GetOptions{})
		return meta.IsNotFound(err), err
	})
	if _, _, err := widgets.Get(ctx, "doomed", "w", meta.GetOptions{}); !meta.IsNotFound(err) {
		t.Errorf("widget: %v, want deleted with its namespace", err)
	}
}
