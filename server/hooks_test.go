package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
)

// fixedGroups is a DiscoveryGroups with one group that is not installed.
type fixedGroups struct{}

func (fixedGroups) APIGroups() []meta.APIGroup {
	v := meta.GroupVersionForDiscovery{GroupVersion: "remote.example.com/v1", Version: "v1"}
	return []meta.APIGroup{{Name: "remote.example.com", Versions: []meta.GroupVersionForDiscovery{v}, PreferredVersion: v}}
}

func (fixedGroups) AggregatedGroups() []meta.APIGroupDiscovery {
	return []meta.APIGroupDiscovery{{ObjectMeta: meta.ObjectMeta{Name: "remote.example.com"},
		Versions: []meta.APIVersionDiscovery{{Version: "v1", Freshness: meta.DiscoveryStale}}}}
}

func TestSetDiscoveryGroups(t *testing.T) {
	s := newServer(t, "test", server.NewEmptyDelegate())
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	s.SetDiscoveryGroups(fixedGroups{})
	rec := get(t, s.Handler, "/apis", "")
	if want := `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"remote.example.com","versions":[{"groupVersion":"remote.example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"remote.example.com/v1","version":"v1"}}]}`; strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("/apis: %d %s\nwant %s", rec.Code, rec.Body, want)
	}
	rec = get(t, s.Handler, "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "as=APIGroupDiscoveryList") {
		t.Errorf("aggregated /apis: Content-Type %q", ct)
	}
	if want := `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"name":"remote.example.com"},"versions":[{"version":"v1","freshness":"Stale"}]}]}`; strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("aggregated /apis: %s\nwant %s", rec.Body, want)
	}
	// The installed group is still served at its own paths.
	if rec := get(t, s.Handler, "/apis/test.example.com/v1", ""); rec.Code != http.StatusOK {
		t.Errorf("/apis/test.example.com/v1: %d", rec.Code)
	}
}

func TestOpenAPIDocumentsAndHandledPaths(t *testing.T) {
	s := newServer(t, "test", server.NewEmptyDelegate())
	if err := s.InstallAPIGroup(widgetGroup(t, "test.example.com")); err != nil {
		t.Fatal(err)
	}
	docs, err := s.OpenAPIDocuments()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(docs.V3Paths(), ","); got != "apis/test.example.com/v1,apis/test.example.com/v1beta1" {
		t.Errorf("V3Paths = %s", got)
	}
	// A server whose /openapi/v2 is handled already keeps that handler.
	if err := s.Handle("/openapi/v2", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("merged"))
	})); err != nil {
		t.Fatal(err)
	}
	s.PrepareRun()
	if rec := get(t, s.Handler, "/openapi/v2", ""); rec.Body.String() != "merged" {
		t.Errorf("/openapi/v2 = %.80s", rec.Body)
	}
}
