// Command chain runs three API servers in one process, composed the way
// kube-apiserver composes APIExtensions -> KubeAPIServer -> Aggregator: each
// serves its own API group, requests the outer ones do not claim fall through
// to the next, and the outermost serves discovery, OpenAPI and health for all
// three behind one filter chain.
//
//	go run ./examples/chain
//	export KUBECONFIG=$PWD/.chain/kubeconfig
//	kubectl api-resources
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Note is the resource every server of the chain serves, each in its own group.
type Note struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Text            string `json:"text,omitempty" description:"What the note says."`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pki, err := certs.Bootstrap(".chain", "127.0.0.1", 8445)
	if err != nil {
		log.Fatal(err)
	}
	outer, err := newChain(memory.New(), func(c *server.Config) {
		c.SecureServing.Port = 8445
		c.SecureServing.Certificate = &pki.Serving
		c.SecureServing.ClientCA = authn.StaticCAs{Pool: pki.ClientCAs}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("serving https://127.0.0.1:8445\n\n    export KUBECONFIG=%s\n    kubectl api-resources\n\n", pki.Kubeconfig)
	if err := outer.PrepareRun().Run(ctx); err != nil {
		log.Fatal(err)
	}
}

// newChain builds extensions -> core -> front, innermost first, and returns
// the outermost; configure applies to the outermost server, the only one
// that listens.
func newChain(s storage.Interface, configure func(*server.Config)) (*server.GenericServer, error) {
	var delegate server.DelegationTarget = server.NewEmptyDelegate()
	var outer *server.GenericServer
	for i, name := range []string{"extensions", "core", "front"} {
		cfg := server.NewConfig()
		// Each server contributes its own health check to the chain's.
		cfg.HealthChecks = []server.HealthCheck{{Name: name + "-ready", Check: func(*http.Request) error { return nil }}}
		if i == 2 {
			configure(cfg)
		}
		completed, err := cfg.Complete()
		if err != nil {
			return nil, err
		}
		srv, err := completed.New(name, delegate)
		if err != nil {
			return nil, err
		}
		group := name + ".example.com"
		notes, err := registry.NewStore(registry.Options[*Note]{
			Resource:        meta.GroupResource{Group: group, Resource: "notes"},
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
