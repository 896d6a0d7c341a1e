// Command controlplane runs the seed's server chain in one process, as
// kube-apiserver composes APIExtensions -> KubeAPIServer -> Aggregator: the
// extensions server (CustomResourceDefinitions and their custom resources,
// server/extensions), then the core server (the core group: namespaces,
// configmaps, secrets, serviceaccounts and their tokens, events, leases;
// NamespaceLifecycle first in admission; the namespace controllers), then
// the aggregator (server/aggregator), which registers a local APIService
// for every built-in group-version and every served CRD version. RBAC,
// flow control, admission registration (webhooks and
// ValidatingAdmissionPolicy) and the review APIs are the system APIs the
// flags turn on; the garbage collector runs over the whole chain. Its flags
// are kube-apiserver's (go run ./examples/controlplane --help); it serves
// https://127.0.0.1:6443 with its data (certificates, kubeconfig, embedded
// etcd) in ./.controlplane.
//
//	go run ./examples/controlplane
//	export KUBECONFIG=$PWD/.controlplane/kubeconfig
//	kubectl api-resources
//	kubectl create namespace team-a
package main

import (
	"os"

	"github.com/apikit-dev/apikit/examples/internal/coregroup"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/server/extensions"
)

func main() {
	o := options.NewServerRunOptions()
	o.SecureServing.BindPort = 6443 // kube-apiserver's
	o.Aggregator = options.NewAggregatorOptions()
	coregroup.AddOptions(o)
	enableGC := true
	cmd := options.NewServerCommand("controlplane", o, func(c *server.Config) (*server.GenericServer, error) {
		c.GarbageCollection = enableGC
		return build(c, o.Aggregator.Config())
	})
	coregroup.AddGarbageCollectorFlag(cmd.Flags(), &enableGC)
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

// build builds extensions -> core -> aggregator, innermost first, from one
// completed c, and returns the outermost, the only one that listens: the
// options install the system APIs into it, and it serves discovery,
// OpenAPI and health for the chain behind one filter chain.
func build(c *server.Config, aggCfg aggregator.Config) (*server.GenericServer, error) {
	// Before Complete: every server of the chain, the extensions server
	// too, admits objects only into namespaces that exist.
	coreAPI, err := coregroup.New(c)
	if err != nil {
		return nil, err
	}
	completed, err := c.Complete()
	if err != nil {
		return nil, err
	}
	ext, err := extensions.New(completed, nil, extensions.Config{})
	if err != nil {
		return nil, err
	}
	coreServer, err := completed.New("kube-apiserver", ext.GenericServer)
	if err != nil {
		return nil, err
	}
	if err := coreAPI.Install(coreServer); err != nil {
		return nil, err
	}
	agg, err := aggregator.New(completed, coreServer, aggCfg)
	if err != nil {
		return nil, err
	}
	// The system APIs (RBAC's roles and rolebindings among them) go into
	// the aggregator: a deleted namespace's objects are looked for there,
	// and in the servers of its remote APIServices, as the garbage
	// collector's owners and dependents are.
	coreAPI.NamespaceContentFrom(agg.GenericServer, agg)
	if err := coregroup.InstallGarbageCollector(c, agg.GenericServer, agg); err != nil {
		return nil, err
	}
	return agg.GenericServer, nil
}
