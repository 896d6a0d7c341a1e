package extensions_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/testenv"
)

// TestChainFollowsCustomResources: a server in front of the extensions
// server is told (WatchAPIGroups) when a CRD's custom resources come and
// go, and its APIGroups have them meanwhile; with GarbageCollection set,
// a custom resource's DELETE leaves the orphan finalizer for the
// collector, as a built-in's does.
func TestChainFollowsCustomResources(t *testing.T) {
	var front *server.GenericServer
	var told atomic.Int32
	env := testenv.Start(t, func(c *server.Config) (*server.GenericServer, error) {
		c.GarbageCollection = true
		completed, ext, err := newExtensions(c)
		if err != nil {
			return nil, err
		}
		front, err = completed.New("front", ext.GenericServer)
		if err != nil {
			return nil, err
		}
		front.WatchAPIGroups(func() { told.Add(1) })
		return front, nil
	})
	hc, err := env.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	hc.Timeout = 30 * time.Second
	c := &client{t: t, host: env.Host, c: hc}
	served := func() []string {
		var out []string
		for _, r := range server.Resources(front.APIGroups()) {
			i := r.Info()
			if i.GroupVersion.Group == "example.com" {
				out = append(out, fmt.Sprintf("%s.%s namespaced=%v", i.Resource, i.GroupVersion, i.NamespaceScoped))
			}
		}
		return out
	}
	if got := served(); len(got) != 0 {
		t.Fatalf("served before the CRD: %v", got)
	}
	if !front.APIGroupsSynced() {
		t.Error("the chain's groups are not synced once the server is ready")
	}
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	c.must(201, "POST", crds, "application/json", widgetsCRD)
	c.waitEstablished("widgets.example.com")
	want := []string{"widgets.example.com/v1 namespaced=true"}
	eventually(t, "the front server told of widgets", func() string {
		if got := served(); told.Load() == 0 || !slices.Equal(got, want) {
			return fmt.Sprintf("told %d times, serves %v", told.Load(), got)
		}
		return ""
	})

	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	c.must(201, "POST", widgets, "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"}}`)
	w := c.must(200, "DELETE", widgets+"/w1", "application/json", `{"propagationPolicy":"Orphan"}`)
	md := w["metadata"].(map[string]any)
	if fmt.Sprint(md["finalizers"]) != "[orphan]" || md["deletionTimestamp"] == nil {
		t.Fatalf("an orphaning delete left %v", md)
	}
	c.must(200, "PATCH", widgets+"/w1", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`)

	before := told.Load()
	c.must(200, "DELETE", crds+"/widgets.example.com", "", "")
	eventually(t, "the front server told widgets went", func() string {
		if got := served(); told.Load() == before || len(got) != 0 {
			return fmt.Sprintf("told %d times, serves %v", told.Load(), got)
		}
		return ""
	})
}
