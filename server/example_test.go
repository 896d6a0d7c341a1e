package server_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Fischer is an example resource.
type Fischer struct {
	meta.TypeMeta      `json:",inline"`
	meta.ObjectMeta    `json:"metadata,omitempty"`
	DisallowedFlunders []string `json:"disallowedFlunders,omitempty"`
}

// Config -> Complete -> New builds a server; InstallAPIGroup serves a
// group-version of stores. Here the handler is called directly; Run
// serves it over TLS (options.NewServerCommand does both from flags).
func Example() {
	mem := memory.New()
	defer mem.Close()
	fischers, err := registry.NewStore(registry.Options[*Fischer]{
		Resource: meta.GroupResource{Group: "wardle.example.com", Resource: "fischers"},
		Kind:     "Fischer", StorageVersion: "v1alpha1",
		Strategy: registry.DefaultStrategy[*Fischer]{}, Storage: mem,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	cfg := server.NewConfig()
	cfg.SecureServing.Certificate = &tls.Certificate{} // Run would serve TLS with it; unused here
	// Everyone is admin here; a real server authenticates client
	// certificates or tokens (see options) and authorizes with RBAC.
	cfg.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) {
		return &authn.Response{User: authn.User{Name: "admin", Groups: []string{authn.SystemPrivilegedGroup}}}, true, nil
	})
	completed, err := cfg.Complete()
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := completed.New("example", server.NewEmptyDelegate())
	if err != nil {
		fmt.Println(err)
		return
	}
	group := server.NewAPIGroupInfo("wardle.example.com").AddVersion("v1alpha1", registry.Serve(fischers))
	if err := srv.InstallAPIGroup(group); err != nil {
		fmt.Println(err)
		return
	}

	do := func(method, path, body string) map[string]any {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		srv.Handler.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		fmt.Println(method, path, rec.Code)
		return out
	}
	do("POST", "/apis/wardle.example.com/v1alpha1/fischers",
		`{"apiVersion":"wardle.example.com/v1alpha1","kind":"Fischer","metadata":{"name":"f"},"disallowedFlunders":["x"]}`)
	got := do("GET", "/apis/wardle.example.com/v1alpha1/fischers/f", "")
	fmt.Println(got["kind"], got["disallowedFlunders"])
	discovery := do("GET", "/apis/wardle.example.com/v1alpha1", "")
	for _, r := range discovery["resources"].([]any) {
		fmt.Println(r.(map[string]any)["name"])
	}
	// Output:
	// POST /apis/wardle.example.com/v1alpha1/fischers 201
	// GET /apis/wardle.example.com/v1alpha1/fischers/f 200
	// Fischer [x]
	// GET /apis/wardle.example.com/v1alpha1 200
	// fischers
}
