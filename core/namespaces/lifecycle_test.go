package namespaces_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/memory"
)

// cm is an object of a namespaced resource for the plugin to admit.
type cm struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
}

func TestLifecyclePlugin(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	for _, n := range []string{"active", "going", "default"} {
		if _, err := store.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: n}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The kubernetes finalizer keeps it, Terminating.
	if _, _, err := store.Delete(ctx, "", "going", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	chain := admission.Chain{namespaces.Lifecycle(store)}

	configmaps := meta.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cmKind := meta.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	nsResource := meta.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	nsKind := meta.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	flunders := meta.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}
	flunderKind := meta.GroupVersionKind{Group: "wardle.example.com", Version: "v1alpha1", Kind: "Flunder"}
	obj := func(name, generateName string) meta.Object {
		return &cm{ObjectMeta: meta.ObjectMeta{Name: name, GenerateName: generateName}}
	}
	tests := []struct {
		name     string
		attrs    admission.Attributes
		validate bool // run the validating step instead of the mutating one
		want     string
		code     int32
		cause    *meta.StatusCause
	}{
		{name: "create in an active namespace",
			attrs: admission.Attributes{Operation: admission.Create, Kind: cmKind, Resource: configmaps, Namespace: "active", Name: "a", Object: obj("a", "")}},
		{name: "create in a missing namespace",
			attrs: admission.Attributes{Operation: admission.Create, Kind: cmKind, Resource: configmaps, Namespace: "missing", Name: "a", Object: obj("a", "")},
			want:  `namespaces "missing" not found`, code: 404},
		{name: "update in a missing namespace",
			attrs: admission.Attributes{Operation: admission.Update, Kind: cmKind, Resource: configmaps, Namespace: "missing", Name: "a", Object: obj("a", ""), OldObject: obj("a", "")},
			want:  `namespaces "missing" not found`, code: 404},
		{name: "custom resource in a missing namespace",
			attrs: admission.Attributes{Operation: admission.Create, Kind: flunderKind, Resource: flunders, Namespace: "missing", Name: "f", Object: obj("f", "")},
			want:  `namespaces "missing" not found`, code: 404},
		{name: "create in a terminating namespace",
			attrs: admission.Attributes{Operation: admission.Create, Kind: cmKind, Resource: configmaps, Namespace: "going", Name: "a", Object: obj("a", "")},
			want:  `configmaps "a" is forbidden: unable to create new content in namespace going because it is being terminated`, code: 403,
			cause: &meta.StatusCause{Type: "NamespaceTerminating", Message: "namespace going is being terminated", Field: "metadata.namespace"}},
		{name: "generateName in a terminating namespace",
			attrs: admission.Attributes{Operation: admission.Create, Kind: flunderKind, Resource: flunders, Namespace: "going", Object: obj("", "f-")},
			want:  `flunders.wardle.example.com "f-" is forbidden: unable to create new content in namespace going because it is being terminated`, code: 403},
		{name: "update in a terminating namespace",
			attrs: admission.Attributes{Operation: admission.Update, Kind: cmKind, Resource: configmaps, Namespace: "going", Name: "a", Object: obj("a", ""), OldObject: obj("a", "")}},
		{name: "delete in a missing namespace",
			attrs: admission.Attributes{Operation: admission.Delete, Kind: cmKind, Resource: configmaps, Namespace: "missing", Name: "a", OldObject: obj("a", "")}},
		{name: "cluster-scoped resource",
			attrs: admission.Attributes{Operation: admission.Create, Kind: meta.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
				Resource: meta.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Name: "r", Object: obj("r", "")}},
		{name: "access review in a missing namespace",
			attrs: admission.Attributes{Operation: admission.Create, Kind: meta.GroupVersionKind{Group: "authorization.k8s.io", Version: "v1", Kind: "LocalSubjectAccessReview"},
				Resource: meta.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "localsubjectaccessreviews"}, Namespace: "missing", Object: obj("", "")}},
		{name: "create a namespace",
			attrs: admission.Attributes{Operation: admission.Create, Kind: nsKind, Resource: nsResource, Name: "new", Object: obj("new", "")}},
		{name: "delete an immortal namespace", validate: true,
			attrs: admission.Attributes{Operation: admission.Delete, Kind: nsKind, Resource: nsResource, Name: "default", OldObject: obj("default", "")},
			want:  `namespaces "default" is forbidden: this namespace may not be deleted`, code: 403},
		{name: "delete kube-system", validate: true,
			attrs: admission.Attributes{Operation: admission.Delete, Kind: nsKind, Resource: nsResource, Name: "kube-system", OldObject: obj("kube-system", "")},
			want:  `namespaces "kube-system" is forbidden: this namespace may not be deleted`, code: 403},
		{name: "delete another namespace", validate: true,
			attrs: admission.Attributes{Operation: admission.Delete, Kind: nsKind, Resource: nsResource, Name: "active", OldObject: obj("active", "")}},
		{name: "update an immortal namespace",
			attrs: admission.Attributes{Operation: admission.Update, Kind: nsKind, Resource: nsResource, Name: "default", Object: obj("default", ""), OldObject: obj("default", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.attrs
			var err error
			if tt.validate {
				err = chain.Validate(ctx, &a)
			} else {
				err = chain.Admit(ctx, &a)
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *meta.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want the Status %q", err, tt.want)
			}
			if se.ErrStatus.Message != tt.want || se.ErrStatus.Code != tt.code {
				t.Fatalf("got %d %q, want %d %q", se.ErrStatus.Code, se.ErrStatus.Message, tt.code, tt.want)
			}
			if tt.cause != nil && (se.ErrStatus.Details == nil || !slices.Contains(se.ErrStatus.Details.Causes, *tt.cause)) {
				t.Fatalf("details %+v lack the cause %+v", se.ErrStatus.Details, *tt.cause)
			}
		})
	}
}

func TestEnsureSystemNamespaces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := newStore(t)
	// One exists already: it is kept, not an error.
	if _, err := store.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "default", Labels: map[string]string{"mine": "yes"}}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := namespaces.EnsureSystemNamespaces(ctx, store, func(err error) { t.Error(err) }); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		ns, _, err := store.Get(ctx, "", n, meta.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if ns.Status.Phase != namespaces.PhaseActive {
			t.Errorf("%s: phase %q", n, ns.Status.Phase)
		}
	}
	if ns, _, _ := store.Get(ctx, "", "default", meta.GetOptions{}); ns.Labels["mine"] != "yes" {
		t.Errorf("default was replaced: %v", ns.Labels)
	}
}

// recordingStorage records the options of every Get.
type recordingStorage struct {
	storage.Interface
	mu   sync.Mutex
	gets []storage.GetOptions
}

func (r *recordingStorage) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	r.mu.Lock()
	r.gets = append(r.gets, opts)
	r.mu.Unlock()
	return r.Interface.Get(ctx, key, opts)
}

// take returns the Gets so far and forgets them.
func (r *recordingStorage) take() []storage.GetOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	gets := r.gets
	r.gets = nil
	return gets
}

// TestLifecycleReadsAtAnyRevision: the plugin reads an existing namespace
// at any revision (a watch cache's copy), not consistently, which cost a
// round trip to etcd and a progress notification on every create; only a
// namespace the first read does not find is looked up consistently.
func TestLifecycleReadsAtAnyRevision(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	rec := &recordingStorage{Interface: mem}
	store, err := namespaces.New(storage.Shared(rec))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: "active"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	plugin := namespaces.Lifecycle(store).(admission.Mutator)
	admit := func(ns string) error {
		rec.take()
		return plugin.Admit(ctx, &admission.Attributes{Operation: admission.Create, Resource: meta.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Kind: meta.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: ns, Name: "a", Object: &cm{ObjectMeta: meta.ObjectMeta{Name: "a"}}})
	}

	if err := admit("active"); err != nil {
		t.Fatal(err)
	}
	if gets := rec.take(); len(gets) != 1 || gets[0].MinRevision == 0 {
		t.Fatalf("create in an existing namespace read it with %+v; want one read at any revision (MinRevision > 0), no consistent one", gets)
	}

	if err := admit("missing"); !meta.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: %v", err)
	}
	if gets := rec.take(); len(gets) != 2 || gets[0].MinRevision == 0 || gets[1].MinRevision != 0 {
		t.Fatalf("create in a missing namespace read it with %+v; want a read at any revision, then a consistent one", gets)
	}
}

// TestLifecycleWatchCacheReadsOwnWrites: through a watch cache, a namespace
// just created admits objects and one just deleted refuses them, with no
// wait: the cache serves a read not older than the newest write through
// it.
func TestLifecycleWatchCacheReadsOwnWrites(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	f := cacher.NewFactory(storage.Shared(mem), storage.WatchCacheConfig{Enabled: true})
	t.Cleanup(func() { _ = f.Close() })
	store, err := namespaces.New(f)
	if err != nil {
		t.Fatal(err)
	}
	plugin := namespaces.Lifecycle(store).(admission.Mutator)
	for i := range 20 {
		name := fmt.Sprintf("ns-%d", i)
		attrs := func() *admission.Attributes {
			return &admission.Attributes{Operation: admission.Create, Resource: meta.GroupVersionResource{Version: "v1", Resource: "configmaps"},
				Kind: meta.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: name, Name: "a", Object: &cm{ObjectMeta: meta.ObjectMeta{Name: "a"}}}
		}
		if _, err := store.Create(ctx, "", &namespaces.Namespace{ObjectMeta: meta.ObjectMeta{Name: name}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := plugin.Admit(ctx, attrs()); err != nil {
			t.Fatalf("create in %s just created: %v", name, err)
		}
		// The kubernetes finalizer keeps it, Terminating.
		if _, _, err := store.Delete(ctx, "", name, registry.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := plugin.Admit(ctx, attrs())
		if want := "unable to create new content in namespace " + name + " because it is being terminated"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("create in %s just deleted: %v; want %q", name, err, want)
		}
	}
}
