package core_test

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/core"
	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/core/events"
	"github.com/apikit-dev/apikit/core/leases"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/core/secrets"
	"github.com/apikit-dev/apikit/core/serviceaccounts"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// put is a PUT of obj to store: the whole object, with the resourceVersion
// it carries (none here).
func put[T meta.Object](ctx context.Context, store *registry.Store[T], ns string, obj T) (bool, error) {
	_, created, err := store.Update(ctx, ns, obj.GetObjectMeta().Name, func(context.Context, T) (T, error) { return obj, nil }, registry.UpdateOptions{})
	return created, err
}

// TestUnconditionalUpdates: a PUT without a resourceVersion updates the
// kinds kube-apiserver updates unconditionally (configmaps, secrets,
// serviceaccounts, namespaces, events) and is refused for leases, which
// a PUT may create instead.
func TestUnconditionalUpdates(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	api, err := core.New(core.Config{Storage: storage.Shared(mem)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	om := func(name string) meta.ObjectMeta { return meta.ObjectMeta{Name: name} }
	if _, err := api.Namespaces.Create(ctx, "", &namespaces.Namespace{ObjectMeta: om("ns")}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ConfigMaps.Create(ctx, "ns", &configmaps.ConfigMap{ObjectMeta: om("c")}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Secrets.Create(ctx, "ns", &secrets.Secret{ObjectMeta: om("s")}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ServiceAccounts.Create(ctx, "ns", &serviceaccounts.ServiceAccount{ObjectMeta: om("sa")}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := &events.Event{ObjectMeta: om("e"), InvolvedObject: events.ObjectReference{Kind: "ConfigMap", Namespace: "ns", Name: "c"}, Type: "Normal", Reason: "R", Source: events.EventSource{Component: "test"}}
	if _, err := api.Events.Core.Create(ctx, "ns", ev, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	withLabel := func(m meta.ObjectMeta) meta.ObjectMeta {
		m.Labels = map[string]string{"updated": "yes"}
		return m
	}
	tests := []struct {
		name string
		put  func() (bool, error)
	}{
		{"namespace", func() (bool, error) {
			return put(ctx, api.Namespaces, "", &namespaces.Namespace{ObjectMeta: withLabel(om("ns")), Spec: namespaces.NamespaceSpec{Finalizers: []string{"kubernetes"}}})
		}},
		{"configmap", func() (bool, error) {
			return put(ctx, api.ConfigMaps, "ns", &configmaps.ConfigMap{ObjectMeta: withLabel(om("c"))})
		}},
		{"secret", func() (bool, error) {
			return put(ctx, api.Secrets, "ns", &secrets.Secret{ObjectMeta: withLabel(om("s"))})
		}},
		{"serviceaccount", func() (bool, error) {
			return put(ctx, api.ServiceAccounts, "ns", &serviceaccounts.ServiceAccount{ObjectMeta: withLabel(om("sa"))})
		}},
		{"event", func() (bool, error) {
			e := *ev
			e.ObjectMeta = withLabel(om("e"))
			return put(ctx, api.Events.Core, "ns", &e)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if created, err := tt.put(); err != nil || created {
				t.Errorf("PUT without a resourceVersion: created=%v err=%v, want an update", created, err)
			}
		})
	}

	t.Run("lease", func(t *testing.T) {
		holder := "a"
		l := &leases.Lease{ObjectMeta: om("l"), Spec: leases.LeaseSpec{HolderIdentity: &holder}}
		if created, err := put(ctx, api.Leases, "ns", l); err != nil || !created {
			t.Fatalf("PUT of a missing lease: created=%v err=%v, want it created", created, err)
		}
		l = &leases.Lease{ObjectMeta: withLabel(om("l")), Spec: leases.LeaseSpec{HolderIdentity: &holder}}
		_, err := put(ctx, api.Leases, "ns", l)
		if want := `leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`; err == nil || err.Error() != want {
			t.Errorf("PUT of a lease without a resourceVersion: %v, want %s", err, want)
		}
	})
}
