package aggregator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ServiceResolver finds the URL at which a port of a Service is reached:
// where the aggregator sends the requests of an APIService with
// spec.service. It is kube-apiserver's ServiceResolver. kube-apiserver's
// buildServiceResolver picks a cluster resolver (the Service's cluster IP,
// or with --enable-aggregator-routing one of its endpoints) and wraps it in
// a loopback resolver for its own Service; NewClusterIPResolver,
// NewEndpointResolver and NewLoopbackResolver are those, and
// StaticResolver (--service-endpoint) serves without a cluster.
type ServiceResolver interface {
	ResolveEndpoint(namespace, name string, port int32) (*url.URL, error)
}

// Errors a ServiceResolver returns (wrapped) so that the availability
// controller can give kube-aggregator's reasons; any other error is a
// ServiceAccessError.
var (
	// ErrServiceNotFound: no such Service (reason ServiceNotFound).
	ErrServiceNotFound = errors.New("service not found")
	// ErrPortNotFound: the Service has no such port (ServicePortError).
	ErrPortNotFound = errors.New("service port not found")
	// ErrNoEndpoints: the Service has no ready endpoint (MissingEndpoints).
	ErrNoEndpoints = errors.New("no ready endpoints")
)

// reasonFor maps a resolver error to the Available condition's reason.
func reasonFor(err error) string {
	switch {
	case errors.Is(err, ErrServiceNotFound):
		return ReasonServiceNotFound
	case errors.Is(err, ErrPortNotFound):
		return ReasonServicePortError
	case errors.Is(err, ErrNoEndpoints):
		return ReasonMissingEndpoints
	}
	return ReasonServiceAccessError
}

// StaticResolver resolves Services from a fixed table, for an aggregator
// that runs without a cluster: each entry maps NAMESPACE/NAME (every port
// of the Service) or NAMESPACE/NAME:PORT (that port only) to HOST:PORT.
// A Service not in the table is not found.
type StaticResolver map[string]string

// ParseServiceEndpoints reads --service-endpoint values,
// NAMESPACE/NAME[:PORT]=HOST:PORT, into a StaticResolver.
func ParseServiceEndpoints(values []string) (StaticResolver, error) {
	r := StaticResolver{}
	for _, v := range values {
		key, hostPort, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("service endpoint %q: want NAMESPACE/NAME=HOST:PORT", v)
		}
		svc, port, hasPort := strings.Cut(key, ":")
		ns, name, ok := strings.Cut(svc, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("service endpoint %q: the service must be NAMESPACE/NAME", v)
		}
		if hasPort {
			if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
				return nil, fmt.Errorf("service endpoint %q: port %q is not a valid port", v, port)
			}
		}
		host, p, err := net.SplitHostPort(hostPort)
		if err != nil || host == "" {
			return nil, fmt.Errorf("service endpoint %q: want HOST:PORT after '=': %v", v, err)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("service endpoint %q: port %q is not a valid port", v, p)
		}
		if _, dup := r[key]; dup {
			return nil, fmt.Errorf("service endpoint %q: %s given twice", v, key)
		}
		r[key] = hostPort
	}
	return r, nil
}

// ResolveEndpoint implements ServiceResolver.
func (r StaticResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc := namespace + "/" + name
	hostPort, ok := r[svc+":"+strconv.Itoa(int(port))]
	if !ok {
		hostPort, ok = r[svc]
	}
	if !ok {
		return nil, fmt.Errorf("service/%s in %q is not in the --service-endpoint table: %w", name, namespace, ErrServiceNotFound)
	}
	return &url.URL{Scheme: "https", Host: hostPort}, nil
}

// loopbackResolver sends the server's own Service to its loopback address.
type loopbackResolver struct {
	delegate ServiceResolver
	host     *url.URL
}

// NewLoopbackResolver resolves the Service default/kubernetes, port 443
// (the front server's own, as kube-apiserver names it), to host, and every
// other Service with delegate, as kube-apiserver's loopback resolver does.
func NewLoopbackResolver(delegate ServiceResolver, host *url.URL) ServiceResolver {
	return &loopbackResolver{delegate: delegate, host: host}
}

func (r *loopbackResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if namespace == "default" && name == "kubernetes" && port == 443 {
		u := *r.host
		return &u, nil
	}
	return r.delegate.ResolveEndpoint(namespace, name, port)
}

// Service is what the cluster resolvers need to know of a Service.
type Service struct {
	// Type is ClusterIP (or empty), NodePort, LoadBalancer or ExternalName.
	Type string
	// ClusterIP is the Service's virtual IP; "None" for a headless one.
	ClusterIP string
	// ExternalName is the DNS name of an ExternalName Service.
	ExternalName string
	Ports        []ServicePort
}

// ServicePort is one port of a Service.
type ServicePort struct {
	Name string
	Port int32
	// TargetPort is the endpoints' port number, when the Service gives a
	// number; endpoints carry it by the port's name otherwise.
	TargetPort int32
}

// Endpoint is a ready address of a Service's backends and its ports by
// name (EndpointSlice ports; "" for an unnamed port).
type Endpoint struct {
	Address string
	Ports   map[string]int32
}

// ServiceLister reads Services and their ready endpoints from a cluster; a
// program wraps its client (client-go informers, say) in one to resolve
// APIServices the way kube-apiserver does.
type ServiceLister interface {
	// Service returns the Service, or an error wrapping ErrServiceNotFound.
	Service(namespace, name string) (*Service, error)
	// Endpoints returns the ready endpoints of the Service.
	Endpoints(namespace, name string) ([]Endpoint, error)
}

// servicePort finds port among the Service's ports.
func servicePort(svc *Service, namespace, name string, port int32) (ServicePort, error) {
	for _, p := range svc.Ports {
		if p.Port == port {
			return p, nil
		}
	}
	return ServicePort{}, fmt.Errorf("service/%s in %q has no port %d: %w", name, namespace, port, ErrPortNotFound)
}

// clusterIPResolver resolves to the Service's cluster IP (or external
// name), kube-apiserver's default.
type clusterIPResolver struct{ services ServiceLister }

// NewClusterIPResolver resolves a Service to its cluster IP and port, or
// to the DNS name of an ExternalName Service: kube-apiserver's resolver
// without --enable-aggregator-routing.
func NewClusterIPResolver(services ServiceLister) ServiceResolver {
	return clusterIPResolver{services}
}

func (r clusterIPResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc, err := r.services.Service(namespace, name)
	if err != nil {
		return nil, err
	}
	if svc.Type == "ExternalName" {
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.ExternalName, strconv.Itoa(int(port)))}, nil
	}
	if svc.ClusterIP == "" || svc.ClusterIP == "None" {
		return nil, fmt.Errorf("service/%s in %q has no cluster IP", name, namespace)
	}
	if _, err := servicePort(svc, namespace, name, port); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.ClusterIP, strconv.Itoa(int(port)))}, nil
}

// endpointResolver resolves to one of the Service's ready endpoints.
type endpointResolver struct{ services ServiceLister }

// NewEndpointResolver resolves a Service to one of its ready endpoints,
// picked at random for every request, as kube-apiserver does with
// --enable-aggregator-routing; an ExternalName Service resolves to its
// name.
func NewEndpointResolver(services ServiceLister) ServiceResolver {
	return endpointResolver{services}
}

func (r endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc, err := r.services.Service(namespace, name)
	if err != nil {
		return nil, err
	}
	if svc.Type == "ExternalName" {
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.ExternalName, strconv.Itoa(int(port)))}, nil
	}
	sp, err := servicePort(svc, namespace, name, port)
	if err != nil {
		return nil, err
	}
	eps, err := r.services.Endpoints(namespace, name)
	if err != nil {
		return nil, err
	}
	var candidates []string
	for _, ep := range eps {
		p, ok := ep.Ports[sp.Name]
		if !ok && sp.TargetPort != 0 && len(ep.Ports) == 0 {
			p, ok = sp.TargetPort, true
		}
		if ok {
			candidates = append(candidates, net.JoinHostPort(ep.Address, strconv.Itoa(int(p))))
		}
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("service/%s in %q has no ready endpoints for port %d: %w", name, namespace, port, ErrNoEndpoints)
	}
	return &url.URL{Scheme: "https", Host: candidates[rand.IntN(len(candidates))]}, nil
}
