package core

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/core/events"
	"github.com/apikit-dev/apikit/core/leases"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/core/nsdefaults"
	"github.com/apikit-dev/apikit/core/nsdeletion"
	"github.com/apikit-dev/apikit/core/secrets"
	"github.com/apikit-dev/apikit/core/serviceaccounts"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/emicklei/go-restful/v3"
)

// Config says what the core group stores its objects in and how it issues
// service-account tokens.
type Config struct {
	// Storage holds the objects. Required.
	Storage storage.Factory
	// Tokens signs TokenRequests and checks the tokens (the server's
	// ServiceAccountTokens); nil serves the token subresource with 500.
	Tokens *serviceaccount.Tokens
	// EventTTL is how long events live after their last activity; 0 is
	// events.DefaultTTL (kube-apiserver's --event-ttl default, 1 h).
	EventTTL time.Duration
	// RootCA is published as ca.crt in every namespace's kube-root-ca.crt
	// ConfigMap; empty publishes none.
	RootCA []byte
}

// ConfigFor is the Config of a server's config: its storage and
// service-account tokens.
func ConfigFor(c *server.Config) Config {
	return Config{Storage: c.Storage, Tokens: c.ServiceAccountTokens, EventTTL: c.EventTTL, RootCA: c.SecureServing.CABundle}
}

// API is the core group's stores.
type API struct {
	Namespaces      *registry.Store[*namespaces.Namespace]
	ConfigMaps      *registry.Store[*configmaps.ConfigMap]
	Secrets         *registry.Store[*secrets.Secret]
	ServiceAccounts *registry.Store[*serviceaccounts.ServiceAccount]
	Events          *events.Stores
	Leases          *registry.Store[*leases.Lease]
	// NamespaceLister answers admission's namespace lookups: set it as
	// the server.Config's AdmissionNamespaces, so that webhooks' and
	// policies' namespaceSelectors see the namespaces' labels. Install
	// runs its informer.
	NamespaceLister *namespaces.Lister

	tokens   *serviceaccount.Tokens
	eventTTL time.Duration
	rootCA   []byte
	content  []nsdeletion.Content
	// contentFrom, when set, is the server whose chain the namespace
	// controller deletes from (NamespaceContentFrom).
	contentFrom server.DelegationTarget
	remote      []server.ResourceSource
}

// New builds the stores on c's storage.
func New(c Config) (*API, error) {
	if c.Storage == nil {
		return nil, fmt.Errorf("core: no storage")
	}
	a := &API{tokens: c.Tokens, eventTTL: c.EventTTL, rootCA: c.RootCA}
	if a.eventTTL <= 0 {
		a.eventTTL = events.DefaultTTL
	}
	var err error
	if a.Namespaces, err = namespaces.New(c.Storage); err != nil {
		return nil, err
	}
	a.NamespaceLister = namespaces.NewLister(a.Namespaces)
	if a.ConfigMaps, err = configmaps.New(c.Storage); err != nil {
		return nil, err
	}
	if a.Secrets, err = secrets.New(c.Storage); err != nil {
		return nil, err
	}
	if a.ServiceAccounts, err = serviceaccounts.New(c.Storage); err != nil {
		return nil, err
	}
	if a.Events, err = events.New(c.Storage); err != nil {
		return nil, err
	}
	if a.Leases, err = leases.New(c.Storage); err != nil {
		return nil, err
	}
	return a, nil
}

// NamespaceLifecycle is the NamespaceLifecycle admission plugin over these
// namespaces: put it first in the admission chain (server.Config.Admission)
// of every server of the chain that serves namespaced resources, as
// kube-apiserver runs it first.
func (a *API) NamespaceLifecycle() admission.Plugin { return namespaces.Lifecycle(a.Namespaces) }

// AddNamespaceContent names namespaced resources whose objects a
// namespace's deletion deletes too, beside those the server Install is
// given and its delegates serve (found on every pass, custom resources
// included): resources served elsewhere. Call it before Install.
func (a *API) AddNamespaceContent(c ...nsdeletion.Content) { a.content = append(a.content, c...) }

// NamespaceContentFrom makes the namespace controller delete, in a deleted
// namespace, the objects of every namespaced resource srv and the servers
// behind it serve, instead of those of the server Install was given: the
// outermost server of a chain whose system APIs (RBAC's roles and
// rolebindings) are installed in front of the core group, as
// examples/controlplane installs them. It may be called after Install,
// before the server runs.
// remote are sources of resources served by other processes (an
// aggregator's remote APIServices), whose namespaced objects are deleted
// too: a namespace stays Terminating while one of their group-versions is
// unavailable, as with kube's namespace controller.
func (a *API) NamespaceContentFrom(srv server.DelegationTarget, remote ...server.ResourceSource) {
	a.contentFrom, a.remote = srv, remote
}

// Install serves the groups on s: the core group at /api/v1,
// events.k8s.io/v1 and coordination.k8s.io/v1, with the post-start hooks
// start-system-namespaces-controller (default, kube-system, kube-public and
// kube-node-lease created and kept, as kube-apiserver's) and
// core/event-ttl that deletes expired events, and core/namespace-defaults
// that keeps the default ServiceAccount and the kube-root-ca.crt ConfigMap
// in every namespace (package nsdefaults), and core/namespace-controller
// that empties and then removes deleted namespaces (package nsdeletion)
// of every namespaced resource s and the servers behind it serve, and
// core/admission-namespace-informer that keeps NamespaceLister's copy. The service-account
// authenticator, when the server has one, then checks each token's
// service account in this server's storage.
func (a *API) Install(s *server.GenericServer) error {
	g := server.NewAPIGroupInfo("").AddVersion("v1",
		registry.ServeProtobuf(a.Namespaces, namespaces.ProtobufToJSON),
		registry.ServeProtobuf(a.ConfigMaps, configmaps.ProtobufToJSON),
		registry.ServeProtobuf(a.Secrets, secrets.ProtobufToJSON),
		registry.ServeProtobuf(a.ServiceAccounts, serviceaccounts.ProtobufToJSON),
		registry.ServeProtobuf(a.Events.Core, events.ProtobufToJSON))
	nsRoutes := namespaces.Routes(a.Namespaces)
	tokenRoutes := serviceaccounts.TokenRoutes(a.ServiceAccounts, a.tokens, s.Admission())
	g.Versions[0].Routes = func(ws *restful.WebService) {
		nsRoutes(ws)
		tokenRoutes(ws)
	}
	if err := s.InstallAPIGroup(g); err != nil {
		return fmt.Errorf("core: %w", err)
	}
	eventsV1, err := registry.ServeVersionProtobuf(a.Events.Events, "v1", events.ConversionV1, events.ProtobufToJSONV1)
	if err != nil {
		return fmt.Errorf("events.k8s.io: %w", err)
	}
	if err := s.InstallAPIGroup(server.NewAPIGroupInfo(events.GroupName).AddVersion("v1", eventsV1)); err != nil {
		return fmt.Errorf("events.k8s.io: %w", err)
	}
	if err := s.InstallAPIGroup(server.NewAPIGroupInfo(leases.GroupName).AddVersion("v1", registry.ServeProtobuf(a.Leases, leases.ProtobufToJSON))); err != nil {
		return fmt.Errorf("coordination.k8s.io: %w", err)
	}
	nsStore := a.Namespaces
	if err := s.AddPostStartHook("start-system-namespaces-controller", func(ctx context.Context) error {
		log := slog.Default().With("hook", "start-system-namespaces-controller")
		return namespaces.EnsureSystemNamespaces(ctx, nsStore, func(err error) { log.Error("system namespaces", "err", err) })
	}); err != nil {
		return err
	}
	lister := a.NamespaceLister
	if err := s.AddPostStartHook("core/admission-namespace-informer", func(ctx context.Context) error {
		go lister.Run(ctx)
		return nil
	}); err != nil {
		return err
	}
	defaults := nsdefaults.Config{Namespaces: a.Namespaces, ServiceAccounts: a.ServiceAccounts, ConfigMaps: a.ConfigMaps,
		RootCA: a.rootCA, Log: slog.Default().With("hook", "core/namespace-defaults")}
	if err := s.AddPostStartHook("core/namespace-defaults", func(ctx context.Context) error {
		go nsdefaults.Run(ctx, defaults)
		return nil
	}); err != nil {
		return err
	}
	// The core group's resources and every other namespaced one s and its
	// delegates serve, found again on every pass (custom resources come
	// and go), with what AddNamespaceContent named.
	deletion := nsdeletion.Config{Namespaces: a.Namespaces, Content: a.content,
		Log: slog.Default().With("hook", "core/namespace-controller")}
	if err := s.AddPostStartHook("core/namespace-controller", func(ctx context.Context) error {
		// Read at start, so that NamespaceContentFrom may follow Install.
		var from server.DelegationTarget = s
		if a.contentFrom != nil {
			from = a.contentFrom
		}
		deletion.Discover = nsdeletion.Served(from, a.remote...)
		go nsdeletion.Run(ctx, deletion)
		return nil
	}); err != nil {
		return err
	}
	store, ttl := a.Events.Core, a.eventTTL
	if err := s.AddPostStartHook("core/event-ttl", func(ctx context.Context) error {
		go events.Expire(ctx, store, ttl, slog.Default().With("hook", "core/event-ttl"))
		return nil
	}); err != nil {
		return err
	}
	if a.tokens != nil && a.tokens.Authenticator != nil {
		a.tokens.Authenticator.SetLookup(serviceaccounts.Lookup(a.ServiceAccounts))
	}
	return nil
}
