// Command chain is the smallest chain that serves CRDs, kept for bench's
// CRD mode (bench -crd measures the extensions server beside a standalone
// apiextensions-apiserver); examples/controlplane is the chain to run. It
// runs three API servers in one process, composed the way
// kube-apiserver composes APIExtensions -> KubeAPIServer -> Aggregator: the
// extensions server (CustomResourceDefinitions and their custom resources,
// server/extensions), then two servers of a group of notes each. Requests
// the outer ones do not claim fall through to the next, and the outermost
// serves discovery, OpenAPI and health for all three behind one filter
// chain.
//
//	go run ./examples/chain
//	export KUBECONFIG=$PWD/.chain/kubeconfig
//	kubectl api-resources
//	kubectl apply -f my-crd.yaml
package main

import (
	"net/http"
	"os"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/extensions"
)

// Note is the resource the core and front servers serve, each in its own group.
type Note struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Text            string `json:"text,omitempty" description:"What the note says."`
}

func main() {
	o := options.NewServerRunOptions() // kube-apiserver's flags; data in ./.chain
	o.SecureServing.BindPort = 8445
	if err := options.NewServerCommand("chain", o, newChain).Execute(); err != nil {
		os.Exit(1)
	}
}

// newChain builds extensions -> core -> front, innermost first, and returns
// the outermost, the only one that listens. Each server is configured with
// its own copy of c, the flags' configuration: the same storage, timeouts
// and --runtime-config, its own health check.
func newChain(c *server.Config) (*server.GenericServer, error) {
	var delegate server.DelegationTarget = server.NewEmptyDelegate()
	var outer *server.GenericServer
	for _, name := range []string{"extensions", "core", "front"} {
		cfg := *c
		// Each server contributes its own health check to the chain's.
		cfg.HealthChecks = append(append([]server.HealthCheck(nil), c.HealthChecks...),
			server.HealthCheck{Name: name + "-ready", Check: func(*http.Request) error { return nil }})
		completed, err := cfg.Complete()
		if err != nil {
			return nil, err
		}
		if name == "extensions" {
			ext, err := extensions.New(completed, delegate, extensions.Config{})
			if err != nil {
				return nil, err
			}
			delegate = ext.GenericServer
			continue
		}
		srv, err := completed.New(name, delegate)
		if err != nil {
			return nil, err
		}
		group := name + ".example.com"
		resource := meta.GroupResource{Group: group, Resource: "notes"}
		s, err := cfg.Storage.For(resource)
		if err != nil {
			return nil, err
		}
		notes, err := registry.NewStore(registry.Options[*Note]{
			Resource:        resource,
			Kind:            "Note",
			NamespaceScoped: true,
			StorageVersion:  "v1",
			Strategy:        registry.DefaultStrategy[*Note]{},
			Storage:         s,
		})
		if err != nil {
			return nil, err
		}
		if err := srv.InstallAPIGroup(server.NewAPIGroupInfo(group).AddVersion("v1", registry.Serve(notes))); err != nil {
			return nil, err
		}
		delegate, outer = srv, srv
	}
	return outer, nil
}
