package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

type thing struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
}

func thingsIn(t *testing.T, group, version string) registry.Resource {
	t.Helper()
	st, err := registry.NewStore(registry.Options[*thing]{
		Resource: meta.GroupResource{Group: group, Resource: "things"}, Kind: "Thing",
		StorageVersion: version, Strategy: registry.DefaultStrategy[*thing]{}, Storage: memory.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return registry.Serve(st)
}

// TestInstallAPIGroupHonoursAPIEnabled checks that Config.APIEnabled
// (--runtime-config) leaves disabled versions out, and a group with none
// left out entirely.
func TestInstallAPIGroupHonoursAPIEnabled(t *testing.T) {
	c := NewConfig()
	c.APIEnabled = func(gv meta.GroupVersion) bool { return gv.Version != "v1" && gv.Group != "off.example.com" }
	completed, err := c.Complete()
	if err != nil {
		t.Fatal(err)
	}
	s, err := completed.New("test", NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InstallAPIGroup(NewAPIGroupInfo("on.example.com").
		AddVersion("v1", thingsIn(t, "on.example.com", "v1")).
		AddVersion("v1beta1", thingsIn(t, "on.example.com", "v1beta1"))); err != nil {
		t.Fatal(err)
	}
	if err := s.InstallAPIGroup(NewAPIGroupInfo("off.example.com").AddVersion("v2", thingsIn(t, "off.example.com", "v2"))); err != nil {
		t.Fatal(err)
	}
	groups := s.APIGroups()
	if len(groups) != 1 || groups[0].Name != "on.example.com" || len(groups[0].Versions) != 1 || groups[0].Versions[0].Version != "v1beta1" {
		t.Fatalf("installed groups: %+v", groups)
	}
	for path, want := range map[string]int{
		"/apis/on.example.com/v1beta1": http.StatusOK,
		"/apis/on.example.com/v1":      http.StatusNotFound,
		"/apis/off.example.com":        http.StatusNotFound,
	} {
		rec := httptest.NewRecorder()
		s.UnprotectedHandler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d: %s", path, rec.Code, want, rec.Body)
		}
	}
}
