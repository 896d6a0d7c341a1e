package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/server/respond"
)

// PostStartHookFunc runs once the server listens. Its context ends when the
// server shuts down; a hook that starts work must stop it then.
type PostStartHookFunc func(ctx context.Context) error

// PreShutdownHookFunc runs when shutdown begins, before requests drain.
type PreShutdownHookFunc func() error

// DelegationTarget is what a server offers the server in front of it.
type DelegationTarget interface {
	// UnprotectedHandler serves the server's routes without its filters:
	// the server in front has already run them.
	UnprotectedHandler() http.Handler
	// PostStartHooks and PreShutdownHooks are run by the outermost server.
	PostStartHooks() map[string]PostStartHookFunc
	PreShutdownHooks() map[string]PreShutdownHookFunc
	// HealthChecks are served by the outermost server's health endpoints.
	HealthChecks() HealthChecks
	// APIGroups and WebServices feed the outermost server's discovery and
	// OpenAPI documents.
	APIGroups() []*APIGroupInfo
	WebServices() []*restful.WebService
	// NextDelegate is the server behind this one, nil at the end.
	NextDelegate() DelegationTarget
	// WatchAPIGroups has f called after every change of what APIGroups
	// returns (a dynamic group's versions or resources came, changed or
	// went, in this server or behind it) until stop is called: so a
	// controller over every served resource (package gc,
	// core/nsdeletion) follows custom resources. f runs on the goroutine
	// that made the change and must not block.
	WatchAPIGroups(f func()) (stop func())
	// APIGroupsSynced reports whether APIGroups has every group this
	// server and those behind it serve since they started: false while
	// a server of dynamic groups has yet to serve those it stored (the
	// extensions server, until its CRDs are served), when a controller
	// over every served resource must not take a missing one for absent.
	APIGroupsSynced() bool
}

// HealthChecks are the checks of the three health endpoints.
type HealthChecks struct {
	Healthz, Livez, Readyz []HealthCheck
}

// APIGroupInfo is an API group to install: its versions in priority order
// (the first is preferred) and each version's resources.
type APIGroupInfo struct {
	Name     string
	Versions []APIVersionInfo

	// dynamic marks a group of SetDynamicGroups: its resources' routes are
	// no WebService's, and its OpenAPI is its server's to publish.
	dynamic bool
}

// Dynamic says the group is one of SetDynamicGroups, served while its
// server says so (a CRD group), not installed for the server's lifetime.
func (g *APIGroupInfo) Dynamic() bool { return g.dynamic }

// APIVersionInfo is one version of an API group.
type APIVersionInfo struct {
	Version   string
	Resources []registry.Resource
	// Routes, when set, adds routes of the caller's own to the version's
	// WebService (rooted at /apis/<group>/<version>) after the resources'
	// routes: subresources of a resource's objects, such as a streaming
	// GET .../flunders/{name}/log or a POST of a custom verb, given their
	// handlers with endpoints.To. They are served behind the whole filter
	// chain (authorization sees the subresource), listed by discovery with
	// the verbs of their methods, and documented in OpenAPI; a route with
	// endpoints.MetadataLongRunning set skips the request timeout and holds
	// no flow-control seat while it runs.
	Routes func(ws *restful.WebService)

	// subresources are the subresource routes of the installed WebService.
	subresources []subresource
}

// NewAPIGroupInfo starts an APIGroupInfo.
func NewAPIGroupInfo(group string) *APIGroupInfo { return &APIGroupInfo{Name: group} }

// AddVersion appends a version (lower priority than those before it).
func (g *APIGroupInfo) AddVersion(version string, resources ...registry.Resource) *APIGroupInfo {
	g.Versions = append(g.Versions, APIVersionInfo{Version: version, Resources: resources})
	return g
}

// GenericServer is one API server: its routes, its handler chain, its hooks.
type GenericServer struct {
	name     string
	config   *completedConfig
	delegate DelegationTarget

	container   *restful.Container
	routes      *apiRoutes
	mux         *http.ServeMux
	unprotected http.Handler
	// Handler is the full handler: the filter chain around the routes of
	// this server and its delegates.
	Handler http.Handler

	// schemas holds the schema of every resource this server serves,
	// reflected from its Go type at install; OpenAPI is rendered from it
	// and server-side apply merges by it.
	schemas *schema.Set

	mu               sync.Mutex
	groups           []*APIGroupInfo
	postStartHooks   map[string]PostStartHookFunc
	preShutdownHooks map[string]PreShutdownHookFunc
	health           HealthChecks
	stopWatches      chan struct{}
	stopOnce         sync.Once
	runtime          *runtimeState
	watchers         groupWatchers // WatchAPIGroups
	// discoveryGroups, when set (SetDiscoveryGroups), is what /apis lists.
	discoveryGroups atomic.Pointer[DiscoveryGroups]
	// dynamicGroups, when set (SetDynamicGroups), adds groups served
	// outside InstallAPIGroup; dynamicSynced is set by the first
	// DynamicGroupsChanged.
	dynamicGroups atomic.Pointer[func() []*APIGroupInfo]
	dynamicSynced atomic.Bool
	// dynamicOpenAPI, when set (SetDynamicOpenAPI), adds documents.
	dynamicOpenAPI atomic.Pointer[OpenAPISource]
}

// emptyDelegate ends a chain: it serves nothing but 404s.
type emptyDelegate struct{}

// NewEmptyDelegate returns the DelegationTarget that ends a chain.
func NewEmptyDelegate() DelegationTarget { return emptyDelegate{} }

func (emptyDelegate) UnprotectedHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, r, meta.NewNotFoundPath())
	})
}
func (emptyDelegate) PostStartHooks() map[string]PostStartHookFunc     { return nil }
func (emptyDelegate) PreShutdownHooks() map[string]PreShutdownHookFunc { return nil }
func (emptyDelegate) HealthChecks() HealthChecks                       { return HealthChecks{} }
func (emptyDelegate) APIGroups() []*APIGroupInfo                       { return nil }
func (emptyDelegate) WebServices() []*restful.WebService               { return nil }
func (emptyDelegate) NextDelegate() DelegationTarget                   { return nil }
func (emptyDelegate) WatchAPIGroups(func()) func()                     { return func() {} }
func (emptyDelegate) APIGroupsSynced() bool                            { return true }

// Schemas returns the schemas of the resources this server serves, keyed
// by their Go types (schema.Key).
func (s *GenericServer) Schemas() *schema.Set { return s.schemas }

// Admission is the admission chain this server's resources run on writes
// (Config.Admission without the plugins DisabledAdmissionPlugins names),
// for a handler installed beside them that admits its writes as they do:
// the core group's serviceaccounts/token create.
func (s *GenericServer) Admission() admission.Chain {
	return s.config.Admission.Without(s.config.DisabledAdmissionPlugins...)
}

// New builds a server named name in front of delegate.
func (c CompletedConfig) New(name string, delegate DelegationTarget) (*GenericServer, error) {
	if c.completedConfig == nil {
		return nil, errors.New("server: New called on a zero CompletedConfig; use Config.Complete")
	}
	if delegate == nil {
		delegate = NewEmptyDelegate()
	}
	s := &GenericServer{
		name:             name,
		config:           c.completedConfig,
		delegate:         delegate,
		container:        restful.NewContainer(),
		routes:           newAPIRoutes(),
		mux:              http.NewServeMux(),
		postStartHooks:   map[string]PostStartHookFunc{},
		preShutdownHooks: map[string]PreShutdownHookFunc{},
		stopWatches:      make(chan struct{}),
		schemas:          schema.NewSet(),
	}
	s.health = HealthChecks{
		Healthz: append([]HealthCheck{pingCheck}, c.HealthChecks...),
		Livez:   append(append([]HealthCheck{pingCheck}, c.HealthChecks...), c.LivezChecks...),
		Readyz:  append(append([]HealthCheck{pingCheck}, c.HealthChecks...), c.ReadyzChecks...),
	}
	// The delegates' hooks run with ours: only the outermost server runs.
	for n, h := range delegate.PostStartHooks() {
		if err := s.AddPostStartHook(n, h); err != nil {
			return nil, err
		}
	}
	for n, h := range delegate.PreShutdownHooks() {
		if err := s.AddPreShutdownHook(n, h); err != nil {
			return nil, err
		}
	}
	// A change behind this server is a change of its APIGroups too, for
	// the servers in front of it and its own watchers.
	delegate.WatchAPIGroups(s.notifyAPIGroups)
	c.Metrics.RegisterObjectCounts((&objectCounts{s: s}).get)
	s.unprotected = http.HandlerFunc(s.direct)
	s.Handler = c.BuildHandlerChain(s.unprotected, s.chainConfig(c))
	s.installDefaultRoutes()
	return s, nil
}

// chainConfig is c as the handler chain reads it: its LongRunning also
// holds requests of the subresource routes marked long-running in this
// server or behind it (endpoints.MetadataLongRunning). It is a copy, so
// that servers built from one CompletedConfig do not share the decision.
func (s *GenericServer) chainConfig(c CompletedConfig) *CompletedConfig {
	cfg := *c.Config
	configured := cfg.LongRunning
	cfg.LongRunning = func(i *request.Info) bool { return configured(i) || s.routeLongRunning(i) }
	return &CompletedConfig{&completedConfig{&cfg}}
}

// direct routes a request: to a WebService of this server, to a non-REST
// handler of this server, or to the delegate.
func (s *GenericServer) direct(w http.ResponseWriter, r *http.Request) {
	if s.routes.owns(r.URL.Path) {
		s.routes.serve(w, r)
		return
	}
	if h, pattern := s.mux.Handler(r); pattern != "" {
		metrics.MarkRouted(r.Context(), strings.TrimSuffix(pattern, "{$}"))
		h.ServeHTTP(w, r)
		return
	}
	s.delegate.UnprotectedHandler().ServeHTTP(w, r)
}

// UnprotectedHandler implements DelegationTarget.
func (s *GenericServer) UnprotectedHandler() http.Handler { return s.unprotected }

// PostStartHooks implements DelegationTarget.
func (s *GenericServer) PostStartHooks() map[string]PostStartHookFunc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyMap(s.postStartHooks)
}

// PreShutdownHooks implements DelegationTarget.
func (s *GenericServer) PreShutdownHooks() map[string]PreShutdownHookFunc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyMap(s.preShutdownHooks)
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// HealthChecks implements DelegationTarget: this server's and its delegates'.
func (s *GenericServer) HealthChecks() HealthChecks {
	s.mu.Lock()
	h := HealthChecks{
		Healthz: append([]HealthCheck(nil), s.health.Healthz...),
		Livez:   append([]HealthCheck(nil), s.health.Livez...),
		Readyz:  append([]HealthCheck(nil), s.health.Readyz...),
	}
	s.mu.Unlock()
	d := s.delegate.HealthChecks()
	h.Healthz = mergeChecks(h.Healthz, d.Healthz)
	h.Livez = mergeChecks(h.Livez, d.Livez)
	h.Readyz = mergeChecks(h.Readyz, d.Readyz)
	return h
}

func mergeChecks(a, b []HealthCheck) []HealthCheck {
	seen := make(map[string]bool, len(a))
	for _, c := range a {
		seen[c.Name] = true
	}
	for _, c := range b {
		if !seen[c.Name] {
			a = append(a, c)
			seen[c.Name] = true
		}
	}
	return a
}

// APIGroups implements DelegationTarget: this server's groups (those
// installed, then the dynamic ones) and its delegates'.
func (s *GenericServer) APIGroups() []*APIGroupInfo {
	s.mu.Lock()
	groups := append([]*APIGroupInfo(nil), s.groups...)
	s.mu.Unlock()
	if f := s.dynamicGroups.Load(); f != nil {
		for _, g := range (*f)() {
			d := *g
			d.dynamic = true
			groups = append(groups, &d)
		}
	}
	return append(groups, s.delegate.APIGroups()...)
}

// SetDynamicGroups adds the groups f returns, at each call, to those the
// server offers discovery (its own /apis, and the servers' in front of
// it). A server that serves groups that come and go while it runs, through
// a handler of its own (the extensions server's custom resources, see
// Handle), describes them so; their versions' subresources come from
// APIVersionInfo.DescribeRoutes. f must be cheap and safe for concurrent
// use: discovery calls it per request. The server calls
// DynamicGroupsChanged once f returns the groups it stored (until then
// APIGroupsSynced is false) and after every change.
func (s *GenericServer) SetDynamicGroups(f func() []*APIGroupInfo) {
	s.dynamicGroups.Store(&f)
}

// StopWatches is closed when the server's watches are to end (shutdown),
// for handlers a server serves outside InstallAPIGroup
// (endpoints.Scope.StopWatches).
func (s *GenericServer) StopWatches() <-chan struct{} { return s.stopWatches }

// WebServices implements DelegationTarget: this server's and its delegates'.
func (s *GenericServer) WebServices() []*restful.WebService {
	return append(append([]*restful.WebService(nil), s.container.RegisteredWebServices()...), s.delegate.WebServices()...)
}

// NextDelegate implements DelegationTarget.
func (s *GenericServer) NextDelegate() DelegationTarget { return s.delegate }

// Name returns the server's name.
func (s *GenericServer) Name() string { return s.name }

// AddPostStartHook registers a hook run once the server listens; its
// progress shows as the health check poststarthook/<name>.
func (s *GenericServer) AddPostStartHook(name string, hook PostStartHookFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.postStartHooks[name]; dup {
		return fmt.Errorf("server: post-start hook %q registered twice", name)
	}
	if s.runtime != nil {
		return fmt.Errorf("server: post-start hook %q added after the server started", name)
	}
	s.postStartHooks[name] = hook
	return nil
}

// AddPreShutdownHook registers a hook run when shutdown begins.
func (s *GenericServer) AddPreShutdownHook(name string, hook PreShutdownHookFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.preShutdownHooks[name]; dup {
		return fmt.Errorf("server: pre-shutdown hook %q registered twice", name)
	}
	s.preShutdownHooks[name] = hook
	return nil
}

// Handle serves a non-resource path pattern (http.ServeMux syntax, e.g.
// a "/debug/..." subtree) with h, behind the server's filters: requests are
// authenticated, flow-controlled and authorized as get (or post, ...) on
// the path. It fails when the pattern conflicts with a route already
// there.
func (s *GenericServer) Handle(pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("server: handling %q: %v", pattern, r)
		}
	}()
	s.mux.Handle(pattern, h)
	return nil
}

// AddHealthChecks adds checks to all three health endpoints.
func (s *GenericServer) AddHealthChecks(checks ...HealthCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health.Healthz = append(s.health.Healthz, checks...)
	s.health.Livez = append(s.health.Livez, checks...)
	s.health.Readyz = append(s.health.Readyz, checks...)
}

// AddReadyzChecks adds checks to /readyz only.
func (s *GenericServer) AddReadyzChecks(checks ...HealthCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health.Readyz = append(s.health.Readyz, checks...)
}

// InstallAPIGroup serves g: one WebService per version at
// /apis/<group>/<version>, and the group's discovery documents. The core
// group (Name "") is served on kube's legacy path, /api/<version>, with /api
// listing its versions; /apis leaves it out. Versions
// that Config.APIEnabled disables are left out (the first one left is
// preferred); a group with none left is not installed, and that is not an
// error.
func (s *GenericServer) InstallAPIGroup(g *APIGroupInfo) error {
	if g == nil || len(g.Versions) == 0 {
		return errors.New("server: an API group needs at least one version")
	}
	for _, existing := range s.APIGroups() {
		if existing.Name == g.Name {
			return fmt.Errorf("server: API group %q is already installed in this chain", g.Name)
		}
	}
	// The group installed is a copy: it carries what the WebServices
	// serve, and the caller's value is left as it was.
	served := &APIGroupInfo{Name: g.Name}
	for _, v := range g.Versions {
		if enabled := s.config.APIEnabled; enabled == nil || enabled(meta.GroupVersion{Group: g.Name, Version: v.Version}) {
			served.Versions = append(served.Versions, v)
		} else {
			s.config.Logger.Info("API version disabled", "groupVersion", g.Name+"/"+v.Version)
		}
	}
	if len(served.Versions) == 0 {
		return nil
	}
	g = served
	// Each resource's served versions, for server-side apply's conversions.
	versions := map[string][]registry.Resource{}
	for _, v := range g.Versions {
		for _, res := range v.Resources {
			versions[res.Info().Resource] = append(versions[res.Info().Resource], res)
		}
	}
	for i, v := range g.Versions {
		if v.Version == "" || len(v.Resources) == 0 {
			return fmt.Errorf("server: version %q of group %q needs resources", v.Version, g.Name)
		}
		gv := meta.GroupVersion{Group: g.Name, Version: v.Version}
		ws := new(restful.WebService).Path(GroupVersionPath(gv)).
			Doc("API at " + GroupVersionPath(gv)).ApiVersion(gv.String())
		seen := map[string]bool{}
		for _, res := range v.Resources {
			info := res.Info()
			if info.GroupVersion != gv {
				return fmt.Errorf("server: resource %s is served as %s, not %s", info.Resource, info.GroupVersion, gv)
			}
			if seen[info.Resource] {
				return fmt.Errorf("server: resource %s listed twice in %s", info.Resource, gv)
			}
			seen[info.Resource] = true
			shape, err := s.schemas.AddType(reflect.TypeOf(res.New()))
			if err != nil {
				return fmt.Errorf("server: resource %s of %s: %w", info.Resource, gv, err)
			}
			endpoints.Install(ws, &endpoints.Scope{
				Resource:            res,
				Schemas:             s.schemas,
				Schema:              shape,
				Versions:            versions[info.Resource],
				Admission:           s.Admission(),
				MaxRequestBodyBytes: s.config.MaxRequestBodyBytes,
				MaxObjectBytes:      s.config.MaxObjectBytes,
				MinRequestTimeout:   s.config.MinRequestTimeout,
				StopWatches:         s.stopWatches,
				OmitItemTypes:       true,
				GarbageCollection:   s.config.GarbageCollection,
			})
		}
		if v.Routes != nil {
			v.Routes(ws)
		}
		g.Versions[i].subresources = subresourcesOf(ws)
		resourceList := resourceListFor(gv, g.Versions[i])
		ws.Route(ws.GET("/").To(func(r *restful.Request, w *restful.Response) {
			respond.JSON(w, http.StatusOK, resourceList)
		}).Operation(endpoints.OperationID("get", gv, false, "", "APIResources")).Doc("get available resources").
			Produces("application/json").Writes(meta.APIResourceList{}).Returns(http.StatusOK, "OK", meta.APIResourceList{}))
		if err := s.routes.add(ws); err != nil {
			return err
		}
		s.container.Add(ws)
	}
	s.mu.Lock()
	s.groups = append(s.groups, g)
	s.mu.Unlock()
	if g.Name == "" {
		return nil // /api, which lists the core group, is served from the chain's groups
	}
	group := apiGroupFor(g)
	s.mux.HandleFunc("/apis/"+g.Name, func(w http.ResponseWriter, r *http.Request) {
		respond.JSON(w, http.StatusOK, group)
	})
	return nil
}

// GroupVersionPath is where a group-version is served: /apis/<group>/<version>,
// or /api/<version> for the core group (kube's legacy path).
func GroupVersionPath(gv meta.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// resourceListFor builds the discovery document of one group-version: its
// resources, and the subresources its WebService's routes serve.
func resourceListFor(gv meta.GroupVersion, v APIVersionInfo) *meta.APIResourceList {
	list := &meta.APIResourceList{
		TypeMeta:     meta.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
	}
	for _, res := range v.Resources {
		info := res.Info()
		list.APIResources = append(list.APIResources, meta.APIResource{
			Name: info.Resource, SingularName: info.SingularName, Namespaced: info.NamespaceScoped,
			Kind: info.Kind, Verbs: info.Verbs, ShortNames: info.ShortNames, Categories: info.Categories,
		})
		for _, sub := range v.subresources {
			if sub.resource != info.Resource {
				continue
			}
			kind := sub.kind
			if kind == "" {
				kind = info.Kind
			}
			ar := meta.APIResource{
				Name: info.Resource + "/" + sub.name, Namespaced: info.NamespaceScoped,
				Kind: kind, Verbs: sub.verbs,
			}
			if sub.kindGV != nil {
				ar.Group, ar.Version = sub.kindGV.Group, sub.kindGV.Version
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	sort.SliceStable(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	return list
}

// ResourceList returns the discovery document of the group-version v of
// group (/apis/<group>/<version>), as the server writes it for the
// versions it installs.
func (v APIVersionInfo) ResourceList(group string) *meta.APIResourceList {
	return resourceListFor(meta.GroupVersion{Group: group, Version: v.Version}, v)
}

// DiscoveryGroup returns the discovery document of g (/apis/<group>),
// its first version preferred.
func (g *APIGroupInfo) DiscoveryGroup() *meta.APIGroup { return apiGroupFor(g) }

// apiGroupFor builds the discovery document of a group.
func apiGroupFor(g *APIGroupInfo) *meta.APIGroup {
	out := &meta.APIGroup{TypeMeta: meta.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g.Name}
	for _, v := range g.Versions {
		out.Versions = append(out.Versions, meta.GroupVersionForDiscovery{
			GroupVersion: meta.GroupVersion{Group: g.Name, Version: v.Version}.String(), Version: v.Version})
	}
	out.PreferredVersion = out.Versions[0]
	return out
}
