package endpoints

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestFieldManagersBuiltAtFirstWrite: installing a resource builds no field
// manager (each holds a structured-merge-diff schema, and an idle server
// has dozens of resources it never writes through its handlers); a read
// builds none either; the first write builds them and records
// managedFields.
func TestFieldManagersBuiltAtFirstWrite(t *testing.T) {
	st, err := registry.NewStore(registry.Options[*v1beta1.Flunder]{
		Resource:        meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"},
		Kind:            "Flunder",
		NamespaceScoped: true,
		StorageVersion:  "v1beta1",
		Strategy:        registry.DefaultStrategy[*v1beta1.Flunder]{},
		Storage:         memory.New(),
	})
	if err != nil {
		t.Fatal(err)
	}
	set := schema.NewSet()
	scope := &Scope{Resource: registry.Serve(st), Schemas: set}
	if scope.Schema, err = set.AddType(reflect.TypeOf(scope.Resource.New())); err != nil {
		t.Fatal(err)
	}
	ws := new(restful.WebService).Path("/apis/wardle.example.com/v1beta1")
	Install(ws, scope)
	c := restful.NewContainer()
	c.Add(ws)
	const coll = "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders"
	steps := []struct {
		name, method, path, body string
		code                     int
		built                    bool
	}{
		{"installed", "", "", "", 0, false},
		{"a list", http.MethodGet, coll, "", http.StatusOK, false},
		{"a create", http.MethodPost, coll, `{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":"f"},"spec":{"flunderReference":"x"}}`, http.StatusCreated, true},
	}
	for _, step := range steps {
		if step.method != "" {
			r := httptest.NewRequest(step.method, step.path, strings.NewReader(step.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("User-Agent", "lazy-test/v1")
			w := httptest.NewRecorder()
			c.ServeHTTP(w, r)
			if w.Code != step.code {
				t.Fatalf("%s: %d %s", step.name, w.Code, w.Body)
			}
			if step.built && !strings.Contains(w.Body.String(), `"managedFields"`) {
				t.Errorf("%s: no managedFields in %s", step.name, w.Body)
			}
		}
		s := scope.managers.main != nil
		if s != step.built {
			t.Errorf("after %s: field manager built = %v, want %v", step.name, s, step.built)
		}
	}
}
