// Command wardle serves the API of the Kubernetes sample-apiserver
// (wardle.example.com: Flunder and Fischer) with apikit, on an embedded etcd
// by default. Its flags are kube-apiserver's (go run ./examples/wardle
// --help). On first start it makes a CA, a serving certificate and an admin
// client certificate under --data-dir (./.wardle) and writes a kubeconfig
// there. Its serving certificate also covers api.wardle.svc, the Service
// a front server (examples/aggregated, or kube-apiserver: see deploy/)
// reaches it through; --tls-san adds more names.
//
//	go run ./examples/wardle
//	export KUBECONFIG=$PWD/.wardle/kubeconfig
//	kubectl get flunders
package main

import (
	"os"

	"github.com/apikit-dev/apikit/examples/internal/coregroup"
	"github.com/apikit-dev/apikit/examples/wardle/wardleapi"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/server"
)

func main() {
	o := options.NewServerRunOptions()
	// A front server checks the Service's name, as sample-apiserver's
	// manifests name it: api in the namespace wardle.
	o.SecureServing.AlternateDNS = append(o.SecureServing.AlternateDNS, serviceDNSName)
	// The default roles view, edit and admin cover the wardle API too.
	o.Authorization.RBACPolicy.ClusterRoles = append(o.Authorization.RBACPolicy.ClusterRoles, wardleapi.ClusterRoles()...)
	// --disable-admission-plugins may name the compiled-in plugin.
	o.Admission.Plugins = append(o.Admission.Plugins, wardleapi.BanFlunderPluginName)
	// And what --core-api serves.
	coregroup.AddOptions(o)
	var withCore bool
	enableGC := true
	cmd := options.NewServerCommand("wardle", o, func(c *server.Config) (*server.GenericServer, error) {
		c.GarbageCollection = enableGC
		return wardleapi.BuildWith(c, withCore)
	})
	cmd.Flags().BoolVar(&withCore, "core-api", false,
		"Serve the core group too (/api/v1: namespaces, configmaps, secrets, serviceaccounts and their tokens, events), events.k8s.io and coordination.k8s.io leases.")
	coregroup.AddGarbageCollectorFlag(cmd.Flags(), &enableGC)
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

// serviceDNSName is the name of the Service in front of wardle that a
// front server checks wardle's certificate against.
const serviceDNSName = "api.wardle.svc"
