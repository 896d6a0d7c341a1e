package extensions

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/openapi"
	"github.com/apikit-dev/apikit/storage"
)

// Config is what an extensions server needs beyond its server.Config.
type Config struct {
	// Logger defaults to the server's.
	Logger *slog.Logger
	// ServiceResolver reaches the conversion webhooks a CRD names by a
	// Service (spec.conversion.webhook.clientConfig.service); the
	// aggregator's resolvers (server/aggregator) are ones. Without it such
	// conversions fail; webhooks named by a URL need none.
	ServiceResolver ServiceResolver
	// ConversionTimeout bounds one call of a conversion webhook; the
	// default is kube-apiserver's 30 s.
	ConversionTimeout time.Duration
}

// ServiceResolver finds where a port of a Service is reached.
type ServiceResolver interface {
	ResolveEndpoint(namespace, name string, port int32) (*url.URL, error)
}

// Server serves CustomResourceDefinitions and, for each CRD whose names
// are accepted, its custom resources, as kube-apiserver's
// apiextensions-apiserver does: the first server of a chain.
type Server struct {
	// GenericServer is the server: run it when it is the outermost, or
	// give it to the next server of the chain as its delegate.
	GenericServer *server.GenericServer
	// Store holds the CRDs.
	Store *registry.Store[*CustomResourceDefinition]

	config  server.CompletedConfig
	storage storage.Factory
	logger  *slog.Logger
	next    http.Handler // the delegate chain, for paths no CRD serves

	// resolver and clients reach conversion webhooks: the clients are
	// shared by every CRD, so calls reuse connections across CRD changes.
	resolver          ServiceResolver
	clients           iwebhook.Clients
	conversionTimeout time.Duration

	// served is what the handler serves, replaced as a whole by the
	// controller whenever a CRD changes.
	served atomic.Pointer[state]
	ctrl   *controller

	wg sync.WaitGroup // the controller the post-start hook starts
}

// New builds an extensions server named "apiextensions-apiserver" in
// front of delegate, with c's filters, storage (for the CRDs and their
// custom resources) and settings. It installs apiextensions.k8s.io/v1,
// serves the CRD groups' paths through one handler that looks the CRD up
// in the serving state (routes are never registered at run time), and
// adds the post-start hook that runs the CRD controllers: names and
// conditions, serving, and the cleanup finalizer.
func New(c server.CompletedConfig, delegate server.DelegationTarget, cfg Config) (*Server, error) {
	if c.Storage == nil {
		return nil, errors.New("extensions: the server config has no storage")
	}
	if cfg.Logger == nil {
		cfg.Logger = c.Logger
	}
	if delegate == nil {
		delegate = server.NewEmptyDelegate()
	}
	gs, err := c.New("apiextensions-apiserver", delegate)
	if err != nil {
		return nil, err
	}
	store, err := NewStore(c.Storage)
	if err != nil {
		return nil, err
	}
	s := &Server{
		GenericServer: gs,
		Store:         store,
		config:        c,
		storage:       c.Storage,
		logger:        cfg.Logger,
		next:          delegate.UnprotectedHandler(),

		resolver:          cfg.ServiceResolver,
		conversionTimeout: cfg.ConversionTimeout,
	}
	if s.conversionTimeout <= 0 {
		s.conversionTimeout = defaultConversionTimeout
	}
	s.served.Store(newState(map[string]*servedCRD{}, 0))
	s.ctrl = newController(s)
	res := crdResource{Resource: registry.ServeProtobuf(store, ProtobufToJSON), store: store}
	if err := gs.InstallAPIGroup(server.NewAPIGroupInfo(GroupName).AddVersion(Version, res)); err != nil {
		return nil, err
	}
	if err := gs.Handle("/apis/", http.HandlerFunc(s.serveCustomResources)); err != nil {
		return nil, err
	}
	gs.SetDynamicGroups(func() []*server.APIGroupInfo { return s.served.Load().groups })
	gs.SetDynamicOpenAPI(server.OpenAPISource{
		Generation: func() uint64 { return s.served.Load().generation },
		Documents: func() []openapi.Remote {
			st := s.served.Load()
			st.docsOnce.Do(func() { st.docs = st.openAPI(c.OpenAPITitle, c.OpenAPIVersion) })
			return st.docs
		},
	})
	if err := gs.AddPostStartHook("start-apiextensions-controllers", s.ctrl.start); err != nil {
		return nil, err
	}
	return s, nil
}

// Wait blocks until the controllers the post-start hook started have
// stopped, which they do when the server shuts down.
func (s *Server) Wait() { s.wg.Wait() }

// serveCustomResources serves /apis/<group>/... for the CRD groups and
// hands the rest to the delegate chain.
func (s *Server) serveCustomResources(w http.ResponseWriter, r *http.Request) {
	s.served.Load().serveHTTP(w, r, s.next)
}
