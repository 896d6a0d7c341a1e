// Command crdserver is the apikit server that bench -crd measures beside
// k8s.io/apiextensions-apiserver run standalone: apikit's extensions server
// (server/extensions: CustomResourceDefinitions and their custom
// resources) alone, as the peer is, with kube-apiserver's flags as wardle
// has them and the system APIs the options install (RBAC, flow control,
// the reviews, admission). The chain to run is examples/controlplane; this
// one exists for the benchmark, whose harness builds it from the working
// tree (bench/build.go).
//
//	cd bench && go run ./crdserver --data-dir=/tmp/crdserver
package main

import (
	"os"

	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/extensions"
)

func main() {
	o := options.NewServerRunOptions() // kube-apiserver's flags
	o.SecureServing.BindPort = 8445
	if err := options.NewServerCommand("crdserver", o, newServer).Execute(); err != nil {
		os.Exit(1)
	}
}

// newServer builds the extensions server, the first and only server of its
// chain, from the flags' configuration.
func newServer(c *server.Config) (*server.GenericServer, error) {
	completed, err := c.Complete()
	if err != nil {
		return nil, err
	}
	ext, err := extensions.New(completed, server.NewEmptyDelegate(), extensions.Config{})
	if err != nil {
		return nil, err
	}
	return ext.GenericServer, nil
}
