// Package aggregator is apikit's kube-aggregator: the front server of
// delegated API servers. An Aggregator is a GenericServer in front of a
// delegate chain, as kube-apiserver's Aggregator is in front of
// KubeAPIServer and APIExtensions. It serves apiregistration.k8s.io/v1
// APIServices (stored in the server's storage, with the status
// subresource) and routes each request for /apis/<group>/<version>/...
// where the group-version's APIService says:
//
//   - an APIService without spec.service is local: the request goes down
//     the chain, like any other;
//   - one with spec.service is remote: after the aggregator's own filters
//     (authentication, audit, impersonation, flow control, authorization),
//     the request is proxied, streaming (watches, upgrades for exec and
//     port-forward), over HTTP/2 when the backend speaks it, to the URL
//     the ServiceResolver gives for the Service. The aggregator presents
//     its front-proxy client certificate and names the user in
//     X-Remote-User, X-Remote-Uid, X-Remote-Group and X-Remote-Extra-*
//     (SetProxyHeaders), replacing whatever the client sent there. The
//     backend's certificate must be valid for <service>.<namespace>.svc
//     and signed by spec.caBundle (or spec.insecureSkipTLSVerify).
//
// An availability controller (the apiservice-registration-controller
// post-start hook) probes each remote backend's discovery document every
// few seconds, at once when the APIService changes and when a proxied
// request cannot dial, and sets the Available condition with
// kube-aggregator's reasons; while it is False the group-version answers
// 503 at once, without waiting on a dial. The documents probed are the
// group-versions' discovery: /apis lists every APIService's group, ordered
// by groupPriorityMinimum and versionPriority
// (server.GenericServer.SetDiscoveryGroups), in legacy and aggregated
// (apidiscovery.k8s.io/v2) form, and the backends' OpenAPI v2 and v3
// documents are merged into the aggregator's (openapi.Merge), fetched again
// when a backend's discovery changes or becomes available, and every
// minute. The kube-apiserver-autoregistration hook registers a local
// APIService for every group-version the chain serves (labelled
// AutomanagedLabel), as kube-aggregator's autoregister controller does.
//
// RemoteResources makes the resources of the available remote
// group-versions reachable to the control plane's own controllers (the
// namespace controller and the garbage collector, through
// server.ResourceSource): registry.Resources whose calls go to the
// backend as ControllerUser, with the front-proxy certificate, as
// kube-controller-manager's reach aggregated groups through
// kube-apiserver.
//
// ServiceResolver is pluggable as in kube-apiserver: NewClusterIPResolver
// and NewEndpointResolver read a cluster's Services through a
// ServiceLister (NewServiceClient reads them from a cluster's API),
// NewLoopbackResolver sends the front server's own Service
// (default/kubernetes) to its loopback address, StaticResolver
// (--service-endpoint NAMESPACE/NAME=HOST:PORT) serves without a cluster,
// and NewChainResolver puts one in front of another.
// APIServices name no URLs: which hosts the aggregator dials, with its
// front-proxy credentials, is its operator's choice (the resolver), not
// that of whoever may create an APIService. See docs/aggregation.md.
package aggregator
