package aggregator

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/openapi"
	"github.com/apikit-dev/apikit/server/respond"
)

// Config is what an aggregator needs beyond its server.Config.
type Config struct {
	// ProxyClientCertificate returns the client certificate presented to
	// backends (--proxy-client-cert-file, --proxy-client-key-file), which
	// they trust to name users in X-Remote-* headers
	// (--requestheader-client-ca-file). Nil presents none: backends then
	// see anonymous requests.
	ProxyClientCertificate func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
	// ServiceResolver finds the backends of APIServices with a service.
	// Nil resolves nothing: every such APIService is ServiceNotFound.
	ServiceResolver ServiceResolver
	// ProbeInterval is how often each available backend is asked for its
	// discovery document (default 5s); UnavailableProbeInterval, how often
	// an unavailable one is (default 1s), so that a backend that comes
	// back serves again within a second. A failing proxied dial asks again
	// at once. ProbeTimeout bounds one probe (default 5s).
	ProbeInterval, UnavailableProbeInterval, ProbeTimeout time.Duration
	// OpenAPIRefreshInterval is how often backends' OpenAPI documents are
	// fetched again (default 1m); they are fetched as well whenever a
	// backend becomes available or its discovery document changes.
	OpenAPIRefreshInterval time.Duration
	// Logger defaults to the server's.
	Logger *slog.Logger
}

// Aggregator is the front server of delegated API servers, as
// kube-aggregator is kube-apiserver's: a GenericServer in front of a
// delegate chain that serves apiregistration.k8s.io/v1 APIServices and
// sends the requests of each remote group-version to its backend.
type Aggregator struct {
	// GenericServer is the server to run; its handler chain
	// authenticates and authorizes every request before it is proxied.
	GenericServer *server.GenericServer
	// Store holds the APIServices.
	Store *registry.Store[*APIService]

	cfg      Config
	local    http.Handler // the delegate chain, for local group-versions
	self     http.Handler // the aggregator's own routes and the chain's
	errorLog *log.Logger

	mu       sync.RWMutex
	services map[string]*APIService    // by name, as last seen
	backends map[string]*backend       // remote APIServices, by name
	docs     map[string]*discoveryDoc  // remote discovery, by APIService name
	remoteOA map[string]*remoteOpenAPI // remote OpenAPI, by APIService name
	localRL  map[meta.GroupVersion]*meta.APIResourceList

	probe chan string // names to probe now
	// autoregisterAgain asks registerDynamicGroups for a round.
	autoregisterAgain chan struct{}

	localDocs func() (*openapi.Documents, error) // the chain's, built once
	mergeMu   sync.Mutex                         // one merge at a time
	openAPI   atomic.Pointer[mergedOpenAPI]      // served; nil until a merge

	wg sync.WaitGroup // the controllers the post-start hooks start

	// The watchers of RemoteResources (WatchRemoteResources).
	remoteWatchMu   sync.Mutex
	remoteWatchers  map[uint64]func()
	remoteWatchNext uint64
}

// discoveryDoc is a backend's discovery document of one group-version.
type discoveryDoc struct {
	list *meta.APIResourceList
	raw  []byte
}

// New builds an aggregator named "aggregator" in front of delegate, with
// c's filters, storage (for the APIServices) and settings. It installs
// apiregistration.k8s.io/v1 and adds the post-start hooks that register
// the chain's own group-versions as local APIServices, keep each remote
// one's Available condition current, and merge the backends' discovery
// and OpenAPI documents into the aggregator's.
func New(c server.CompletedConfig, delegate server.DelegationTarget, cfg Config) (*Aggregator, error) {
	if c.Storage == nil {
		return nil, errors.New("aggregator: the server config has no storage for APIServices")
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = 5 * time.Second
	}
	if cfg.UnavailableProbeInterval <= 0 {
		cfg.UnavailableProbeInterval = min(time.Second, cfg.ProbeInterval)
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	if cfg.OpenAPIRefreshInterval <= 0 {
		cfg.OpenAPIRefreshInterval = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Logger
	}
	if delegate == nil {
		delegate = server.NewEmptyDelegate()
	}
	if cfg.ServiceResolver == nil {
		cfg.ServiceResolver = StaticResolver{}
	}
	s, err := c.New("aggregator", delegate)
	if err != nil {
		return nil, err
	}
	store, err := NewStore(c.Storage)
	if err != nil {
		return nil, err
	}
	a := &Aggregator{
		GenericServer: s,
		Store:         store,
		cfg:           cfg,
		local:         delegate.UnprotectedHandler(),
		self:          s.UnprotectedHandler(),
		errorLog:      slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
		services:      map[string]*APIService{},
		backends:      map[string]*backend{},
		docs:          map[string]*discoveryDoc{},
		remoteOA:      map[string]*remoteOpenAPI{},
		localRL:       map[meta.GroupVersion]*meta.APIResourceList{},
		probe:         make(chan string, 64),

		autoregisterAgain: make(chan struct{}, 1),
	}
	a.localDocs = sync.OnceValues(s.OpenAPIDocuments)
	if err := s.InstallAPIGroup(server.NewAPIGroupInfo(GroupName).AddVersion(Version, registry.ServeProtobuf(store, apiServicesProtobuf.ToJSON))); err != nil {
		return nil, err
	}
	if err := s.Handle("/apis/", http.HandlerFunc(a.route)); err != nil {
		return nil, err
	}
	for _, p := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/"} {
		if err := s.Handle(p, http.HandlerFunc(a.serveOpenAPI)); err != nil {
			return nil, err
		}
	}
	s.SetDiscoveryGroups(discoveryGroups{a})
	if err := s.AddPostStartHook("apiservice-registration-controller", a.runController); err != nil {
		return nil, err
	}
	if err := s.AddPostStartHook("kube-apiserver-autoregistration", a.autoregister); err != nil {
		return nil, err
	}
	return a, nil
}

// Wait blocks until the controllers the post-start hooks started have
// stopped, which they do when the server shuts down.
func (a *Aggregator) Wait() { a.wg.Wait() }

// route sends /apis/<group>[/<version>/...] where its APIService says:
// to the backend of a remote one, to the local chain otherwise. The
// group document of a group with remote versions is the aggregator's.
func (a *Aggregator) route(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/apis/")
	group, rest, _ := strings.Cut(rest, "/")
	version, _, _ := strings.Cut(rest, "/")
	if group == "" {
		a.local.ServeHTTP(w, r)
		return
	}
	if version == "" {
		if g, ok := a.remoteGroup(group); ok {
			g.TypeMeta = meta.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			respond.JSON(w, http.StatusOK, g)
			return
		}
		a.local.ServeHTTP(w, r)
		return
	}
	name := APIServiceName(meta.GroupVersion{Group: group, Version: version})
	a.mu.RLock()
	svc, b := a.services[name], a.backends[name]
	a.mu.RUnlock()
	if svc == nil || svc.Spec.Service == nil {
		a.local.ServeHTTP(w, r)
		return
	}
	if b == nil {
		// A remote APIService whose transport cannot be built (a
		// caBundle that is not PEM): it is not available.
		respond.Error(w, r, meta.NewServiceUnavailable("service unavailable"))
		return
	}
	a.serveProxy(w, r, svc, b)
}

// probeSoon asks the controller to probe an APIService now. When many
// requests are queued already it gives up: the controller's next round
// probes every APIService anyway.
func (a *Aggregator) probeSoon(name string) {
	select {
	case a.probe <- name:
	default:
	}
}

// maxDocumentBytes bounds a backend's discovery or OpenAPI document.
const maxDocumentBytes = 64 << 20

func readLimited(r io.Reader, n int64) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(r, n+1)); err != nil {
		return nil, err
	}
	if int64(b.Len()) > n {
		return nil, fmt.Errorf("larger than %d bytes", n)
	}
	return b.Bytes(), nil
}
