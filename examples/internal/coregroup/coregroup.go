// Package coregroup wires the core group (package core: namespaces,
// configmaps, secrets, service accounts and their tokens, events, leases),
// its NamespaceLifecycle admission and the garbage collector (package gc)
// into an example's server: what examples/wardle (--core-api) and
// examples/controlplane share.
package coregroup

import (
	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/core"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/gc"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/server"
)

// AddOptions prepares o for a server that may serve the core group: the
// default roles view, edit and admin cover its resources (harmless when it
// is not served: roles may name resources a server does not serve), and
// --disable-admission-plugins may name NamespaceLifecycle.
func AddOptions(o *options.ServerRunOptions) {
	o.Authorization.RBACPolicy.ClusterRoles = append(o.Authorization.RBACPolicy.ClusterRoles, core.ClusterRoles()...)
	o.Admission.Plugins = append(o.Admission.Plugins, namespaces.LifecyclePluginName)
}

// AddGarbageCollectorFlag adds --enable-garbage-collector, bound to
// enabled, kube-apiserver's flag: the build function copies it into
// server.Config.GarbageCollection and calls InstallGarbageCollector.
func AddGarbageCollectorFlag(fs *pflag.FlagSet, enabled *bool) {
	fs.BoolVar(enabled, "enable-garbage-collector", *enabled,
		"Run the garbage collector (package gc) over the served resources and honour DELETE's propagationPolicy (kubectl delete --cascade=background|foreground|orphan).")
}

// New builds the core group's stores on c's storage, gives admission its
// namespaces' labels (c.AdmissionNamespaces) and puts its
// NamespaceLifecycle plugin first in c.Admission, as kube-apiserver runs
// it: every server built from c (or, in a chain, from copies of c made
// afterwards) creates objects only in namespaces that exist and are not
// terminating. Install the API on the server that is to serve it.
func New(c *server.Config) (*core.API, error) {
	api, err := core.New(core.ConfigFor(c))
	if err != nil {
		return nil, err
	}
	c.Admission = append(admission.Chain{api.NamespaceLifecycle()}, c.Admission...)
	// Webhooks' and policies' namespaceSelectors match the labels of the
	// namespaces served here.
	c.AdmissionNamespaces = api.NamespaceLister
	return api, nil
}

// InstallGarbageCollector runs the garbage collector over what srv and its
// delegates serve when c.GarbageCollection is set (install it on the
// outermost server of a chain, so that it sees every server's resources),
// and the resources of remote (an aggregator's remote APIServices).
func InstallGarbageCollector(c *server.Config, srv *server.GenericServer, remote ...server.ResourceSource) error {
	if !c.GarbageCollection {
		return nil
	}
	return gc.Install(srv, c.Logger, remote...)
}
