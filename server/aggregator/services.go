package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// serviceClient is a ServiceLister that reads a cluster's API (Services
// and discovery.k8s.io/v1 EndpointSlices) over HTTPS, keeping each answer
// for a short while so that a flood of proxied requests costs the cluster
// little.
type serviceClient struct {
	base   *url.URL
	creds  certs.Kubeconfig
	client *http.Client
	ttl    time.Duration

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	at  time.Time
	svc *Service
	eps []Endpoint
	err error
}

// NewServiceClient returns a ServiceLister that reads Services and their
// EndpointSlices from the cluster k names (a kubeconfig whose user may get
// services and list endpointslices), each answer kept for ttl (2s when 0).
// With NewClusterIPResolver or NewEndpointResolver, an aggregator resolves
// APIServices as kube-apiserver does.
func NewServiceClient(k certs.Kubeconfig, ttl time.Duration) (ServiceLister, error) {
	base, err := url.Parse(k.Server)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("aggregator: the kubeconfig's server %q is not a URL", k.Server)
	}
	tc, err := k.ClientTLSConfig()
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	if ttl <= 0 {
		ttl = 2 * time.Second
	}
	return &serviceClient{base: base, creds: k, ttl: ttl, cache: map[string]cached{},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, Proxy: nil}}}, nil
}

// lookup answers from the cache or with fetch.
func (c *serviceClient) lookup(key string, fetch func() cached) cached {
	c.mu.Lock()
	e, ok := c.cache[key]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e
	}
	e = fetch()
	e.at = time.Now()
	c.mu.Lock()
	c.cache[key] = e
	c.mu.Unlock()
	return e
}

// get decodes the JSON at path into v; a 404 is ErrServiceNotFound.
func (c *serviceClient) get(path string, q url.Values, v any) error {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if t := c.creds.BearerToken(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrServiceNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: %s", u.Path, resp.Status)
	}
	return json.Unmarshal(body, v)
}

// Service implements ServiceLister.
func (c *serviceClient) Service(namespace, name string) (*Service, error) {
	e := c.lookup("svc/"+namespace+"/"+name, func() cached {
		var obj struct {
			Spec struct {
				Type         string `json:"type"`
				ClusterIP    string `json:"clusterIP"`
				ExternalName string `json:"externalName"`
				Ports        []struct {
					Name       string          `json:"name"`
					Port       int32           `json:"port"`
					TargetPort json.RawMessage `json:"targetPort"`
				} `json:"ports"`
			} `json:"spec"`
		}
		err := c.get("/api/v1/namespaces/"+url.PathEscape(namespace)+"/services/"+url.PathEscape(name), nil, &obj)
		if errors.Is(err, ErrServiceNotFound) {
			return cached{err: fmt.Errorf("service/%s in %q is not present: %w", name, namespace, ErrServiceNotFound)}
		}
		if err != nil {
			return cached{err: fmt.Errorf("getting service/%s in %q: %w", name, namespace, err)}
		}
		svc := &Service{Type: obj.Spec.Type, ClusterIP: obj.Spec.ClusterIP, ExternalName: obj.Spec.ExternalName}
		for _, p := range obj.Spec.Ports {
			sp := ServicePort{Name: p.Name, Port: p.Port}
			_ = json.Unmarshal(p.TargetPort, &sp.TargetPort) // a named target port stays 0
			svc.Ports = append(svc.Ports, sp)
		}
		return cached{svc: svc}
	})
	return e.svc, e.err
}

// Endpoints implements ServiceLister: the ready endpoints of the
// Service's EndpointSlices.
func (c *serviceClient) Endpoints(namespace, name string) ([]Endpoint, error) {
	e := c.lookup("eps/"+namespace+"/"+name, func() cached {
		var list struct {
			Items []struct {
				Endpoints []struct {
					Addresses  []string `json:"addresses"`
					Conditions struct {
						Ready *bool `json:"ready"`
					} `json:"conditions"`
				} `json:"endpoints"`
				Ports []struct {
					Name *string `json:"name"`
					Port *int32  `json:"port"`
				} `json:"ports"`
			} `json:"items"`
		}
		q := url.Values{"labelSelector": {"kubernetes.io/service-name=" + name}}
		err := c.get("/apis/discovery.k8s.io/v1/namespaces/"+url.PathEscape(namespace)+"/endpointslices", q, &list)
		if err != nil {
			return cached{err: fmt.Errorf("listing the endpoints of service/%s in %q: %w", name, namespace, err)}
		}
		var eps []Endpoint
		for _, slice := range list.Items {
			ports := map[string]int32{}
			for _, p := range slice.Ports {
				if p.Port == nil {
					continue
				}
				n := ""
				if p.Name != nil {
					n = *p.Name
				}
				ports[n] = *p.Port
			}
			for _, ep := range slice.Endpoints {
				// An unknown readiness counts as ready, as in Kubernetes.
				if r := ep.Conditions.Ready; r != nil && !*r {
					continue
				}
				for _, addr := range ep.Addresses {
					eps = append(eps, Endpoint{Address: addr, Ports: ports})
				}
			}
		}
		return cached{eps: eps}
	})
	return e.eps, e.err
}

// chainResolver asks its resolvers in turn; the first that knows the
// Service answers.
type chainResolver []ServiceResolver

// NewChainResolver resolves a Service with the first resolver that knows
// it (that does not answer ErrServiceNotFound): a static table in front of
// a cluster, say.
func NewChainResolver(resolvers ...ServiceResolver) ServiceResolver { return chainResolver(resolvers) }

func (c chainResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	err := fmt.Errorf("service/%s in %q: %w", name, namespace, ErrServiceNotFound)
	for _, r := range c {
		var u *url.URL
		if u, err = r.ResolveEndpoint(namespace, name, port); !errors.Is(err, ErrServiceNotFound) {
			return u, err
		}
	}
	return nil, err
}
