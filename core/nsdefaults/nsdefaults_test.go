package nsdefaults_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/core/nsdefaults"
	"github.com/apikit-dev/apikit/core/serviceaccounts"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestKeepsDefaults(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	f := storage.Shared(mem)
	var c nsdefaults.Config
	var err error
	if c.Namespaces, err = namespaces.New(f); err != nil {
		t.Fatal(err)
	}
	if c.ServiceAccounts, err = serviceaccounts.New(f); err != nil {
		t.Fatal(err)
	}
	if c.ConfigMaps, err = configmaps.New(f); err != nil {
		t.Fatal(err)
	}
	c.RootCA = []byte(ca)
	ctx, cancel := context.WithCancel(context.Background())
	create := func(name string) {
		t.Helper()
		if _, err := c.Namespaces.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: name}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A namespace being deleted gets nothing.
	create("gone")
	if _, _, err := c.Namespaces.Delete(ctx, "", "gone", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create("before")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); nsdefaults.Run(ctx, c) }()
	defer func() { cancel(); wg.Wait() }()

	// eventually polls cond for 30 s: the machine may be loaded.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("after 30s: %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	hasDefaults := func(ns string) func() bool {
		return func() bool {
			if _, _, err := c.ServiceAccounts.Get(ctx, ns, "default", meta.GetOptions{}); err != nil {
				return false
			}
			cm, _, err := c.ConfigMaps.Get(ctx, ns, "kube-root-ca.crt", meta.GetOptions{})
			return err == nil && cm.Data["ca.crt"] == ca && len(cm.Data) == 1 &&
				cm.Annotations["kubernetes.io/description"] != ""
		}
	}
	eventually("defaults in a namespace made before the start", hasDefaults("before"))
	create("after")
	eventually("defaults in a namespace made after the start", hasDefaults("after"))

	if _, _, err := c.ServiceAccounts.Delete(ctx, "after", "default", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ConfigMaps.Delete(ctx, "before", "kube-root-ca.crt", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the deleted objects back", func() bool { return hasDefaults("after")() && hasDefaults("before")() })

	if _, _, err := c.ConfigMaps.Update(ctx, "after", "kube-root-ca.crt", func(_ context.Context, cm *configmaps.ConfigMap) (*configmaps.ConfigMap, error) {
		cm.Data = map[string]string{"ca.crt": "mine", "extra": "x"}
		delete(cm.Annotations, "kubernetes.io/description")
		cm.Labels = map[string]string{"kept": "yes"}
		return cm, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the edited configmap put back", hasDefaults("after"))
	if cm, _, _ := c.ConfigMaps.Get(ctx, "after", "kube-root-ca.crt", meta.GetOptions{}); cm.Labels["kept"] != "yes" {
		t.Errorf("the publisher dropped the configmap's labels: %v", cm.Labels)
	}

	for _, ns := range []string{"gone"} {
		if _, _, err := c.ServiceAccounts.Get(ctx, ns, "default", meta.GetOptions{}); !meta.IsNotFound(err) {
			t.Errorf("serviceaccount in the terminating namespace %s: %v", ns, err)
		}
		if _, _, err := c.ConfigMaps.Get(ctx, ns, "kube-root-ca.crt", meta.GetOptions{}); !meta.IsNotFound(err) {
			t.Errorf("configmap in the terminating namespace %s: %v", ns, err)
		}
	}
}
