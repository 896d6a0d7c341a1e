package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestCoreGroupDiscovery: a core group (name "") installed in a delegate is
// served at /api/v1 and listed by the outermost server's /api, in the legacy
// and the aggregated form, as kube-apiserver does; /apis leaves it out.
func TestCoreGroupDiscovery(t *testing.T) {
	inner := newServer(t, "core", server.NewEmptyDelegate())
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	widgets := registry.MustNewStore(registry.Options[*Widget]{
		Resource: meta.GroupResource{Resource: "widgets"}, Kind: "Widget", NamespaceScoped: true,
		ShortNames: []string{"wd"}, StorageVersion: "v1", Strategy: registry.DefaultStrategy[*Widget]{}, Storage: mem,
	})
	if err := inner.InstallAPIGroup(server.NewAPIGroupInfo("").AddVersion("v1", registry.Serve(widgets))); err != nil {
		t.Fatal(err)
	}
	outer := newServer(t, "front", inner)
	if err := outer.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	h := outer.Handler

	rec := get(t, h, "/api", "")
	if rec.Code != 200 {
		t.Fatalf("/api: %d %s", rec.Code, rec.Body)
	}
	var versions meta.APIVersions
	if err := json.Unmarshal(rec.Body.Bytes(), &versions); err != nil {
		t.Fatal(err)
	}
	if versions.Kind != "APIVersions" || !slices.Equal(versions.Versions, []string{"v1"}) ||
		len(versions.ServerAddressByClientCIDRs) != 1 || versions.ServerAddressByClientCIDRs[0].ClientCIDR != "0.0.0.0/0" || versions.ServerAddressByClientCIDRs[0].ServerAddress == "" {
		t.Errorf("/api = %s", rec.Body)
	}

	rec = get(t, h, "/api/v1", "")
	want := `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[` +
		`{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["wd"]}]}`
	if got := strings.TrimSpace(rec.Body.String()); rec.Code != 200 || got != want {
		t.Errorf("/api/v1: %d\ngot  %s\nwant %s", rec.Code, got, want)
	}

	rec = get(t, h, "/api", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	var list meta.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if rec.Header().Get("Content-Type") != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" || len(list.Items) != 1 ||
		list.Items[0].Name != "" || len(list.Items[0].Versions) != 1 || list.Items[0].Versions[0].Version != "v1" ||
		len(list.Items[0].Versions[0].Resources) != 1 || *list.Items[0].Versions[0].Resources[0].ResponseKind != (meta.GroupVersionKindJSON{Version: "v1", Kind: "Widget"}) {
		t.Errorf("aggregated /api: %s", rec.Body)
	}

	for _, accept := range []string{"", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"} {
		if body := get(t, h, "/apis", accept).Body.String(); strings.Contains(body, `"name":""`) || !strings.Contains(body, "test.example.com") {
			t.Errorf("/apis (Accept %q) = %s, want the named group only", accept, body)
		}
	}

	rec = get(t, h, "/", "")
	var root struct{ Paths []string }
	if err := json.Unmarshal(rec.Body.Bytes(), &root); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api", "/api/v1", "/apis/test.example.com"} {
		if !slices.Contains(root.Paths, p) {
			t.Errorf("/ does not list %s: %v", p, root.Paths)
		}
	}
	if slices.Contains(root.Paths, "/apis/") || slices.Contains(root.Paths, "/apis//v1") {
		t.Errorf("/ lists the core group under /apis: %v", root.Paths)
	}
}
