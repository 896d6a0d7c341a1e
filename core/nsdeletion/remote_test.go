package nsdeletion_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apikit-dev/apikit/core/nsdeletion"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/storage/memory"
)

// counting is a resource that counts the deletes it is asked for and may
// not serve deletecollection.
type counting struct {
	registry.Resource
	noCollection       bool
	deletes, deleteAll int
}

func (c *counting) Info() registry.ResourceInfo {
	info := c.Resource.Info()
	if c.noCollection {
		info.Verbs = slices.DeleteFunc(slices.Clone(info.Verbs), func(v string) bool { return v == "deletecollection" })
	}
	return info
}

func (c *counting) Delete(ctx context.Context, ns, name string, opts registry.DeleteOptions) (registry.Item, bool, error) {
	c.deletes++
	return c.Resource.Delete(ctx, ns, name, opts)
}

func (c *counting) DeleteCollection(ctx context.Context, ns string, l meta.ListOptions, opts registry.DeleteOptions) (*registry.List, error) {
	c.deleteAll++
	return c.Resource.DeleteCollection(ctx, ns, l, opts)
}

func widgetStore(t *testing.T, group string, namespaced bool) *registry.Store[*meta.PartialObjectMetadata] {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	return registry.MustNewStore(registry.Options[*meta.PartialObjectMetadata]{
		Resource: meta.GroupResource{Group: group, Resource: "widgets"}, Kind: "Widget", NamespaceScoped: namespaced,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*meta.PartialObjectMetadata]{}, Storage: mem,
	})
}

// TestRemoteDeleteAll: a remote resource's objects in a namespace go with
// one deletecollection where it is served (kube's namespace controller's
// way, one request to the other process), one delete each otherwise; other
// namespaces keep theirs, and an object held by a finalizer is counted.
func TestRemoteDeleteAll(t *testing.T) {
	tests := []struct {
		name                      string
		noCollection              bool
		wantDeletes, wantCollects int
	}{
		{"deletecollection served", false, 0, 1},
		{"list and delete", true, 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			st := widgetStore(t, "remote.example.com", true)
			for _, o := range []meta.ObjectMeta{
				{Name: "a", Namespace: "doomed"}, {Name: "b", Namespace: "doomed"},
				{Name: "held", Namespace: "doomed", Finalizers: []string{"example.com/hold"}}, {Name: "c", Namespace: "kept"},
			} {
				if _, err := st.Create(ctx, o.Namespace, &meta.PartialObjectMetadata{ObjectMeta: o}, registry.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			res := &counting{Resource: registry.Serve(st), noCollection: tc.noCollection}
			left, finalizers, err := nsdeletion.Remote(res).DeleteAll(ctx, "doomed")
			if err != nil || left != 1 || !slices.Equal(finalizers, []string{"example.com/hold"}) {
				t.Fatalf("DeleteAll = %d, %v, %v; want 1 left held by example.com/hold", left, finalizers, err)
			}
			if res.deletes != tc.wantDeletes || res.deleteAll != tc.wantCollects {
				t.Errorf("%d deletes and %d deletecollections, want %d and %d", res.deletes, res.deleteAll, tc.wantDeletes, tc.wantCollects)
			}
			l, err := st.List(ctx, "", meta.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range l.Items {
				names = append(names, it.Object.Namespace+"/"+it.Object.Name)
			}
			slices.Sort(names)
			if want := []string{"doomed/held", "kept/c"}; !slices.Equal(names, want) {
				t.Errorf("left %v, want %v", names, want)
			}
		})
	}
}

// source is a server.ResourceSource of fixed resources.
type source struct {
	res []registry.Resource
	err error
}

func (s source) RemoteResources() ([]registry.Resource, error) { return s.res, s.err }
func (s source) WatchRemoteResources(func()) func()            { return func() {} }

// TestServedRemote: Served adds a remote source's namespaced resources to
// the chain's, and turns its error into the message of kube's
// NamespaceDeletionDiscoveryFailure condition.
func TestServedRemote(t *testing.T) {
	namespaced := registry.Serve(widgetStore(t, "remote.example.com", true))
	cluster := registry.Serve(widgetStore(t, "cluster.example.com", false))
	stale := &aggregator.DiscoveryError{Failed: []string{"remote.example.com/v2: stale GroupVersion discovery: remote.example.com/v2"}}
	tests := []struct {
		name    string
		src     source
		want    []string
		wantErr string
	}{
		{"available", source{res: []registry.Resource{namespaced, cluster}}, []string{"widgets.remote.example.com"}, ""},
		{"a group-version unavailable", source{res: []registry.Resource{namespaced}, err: stale}, []string{"widgets.remote.example.com"},
			"Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: " +
				"remote.example.com/v2: stale GroupVersion discovery: remote.example.com/v2"},
		{"another error", source{err: errors.New("no backends")}, nil, "no backends"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content, err := nsdeletion.Served(server.NewEmptyDelegate(), tc.src)()
			var got []string
			for _, c := range content {
				got = append(got, c.Resource().String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("content %v, want %v", got, tc.want)
			}
			if gotErr := ""; err != nil || tc.wantErr != "" {
				if err != nil {
					gotErr = err.Error()
				}
				if gotErr != tc.wantErr {
					t.Errorf("error %q, want %q", gotErr, tc.wantErr)
				}
			}
		})
	}
}
