package policyset

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Policy is an admission policy of either kind, as the set sees it.
type Policy interface {
	meta.Object
	GetParamKind() *registration.ParamKind
	GetMatchConstraints() *registration.MatchResources
}

// Binding is a binding of either kind, as the set sees it.
type Binding interface {
	meta.Object
	GetPolicyName() string
	GetParamRef() *registration.ParamRef
	GetMatchResources() *registration.MatchResources
}

// Hook is one policy in effect: its generation compiled by its plugin,
// its matchConstraints parsed and, when bound with a paramKind, the
// informer of its params.
type Hook[P Policy, C any] struct {
	Policy   P
	Compiled C
	// Match is nil for a policy without matchConstraints (stored before a
	// server that requires them): it matches nothing.
	Match  *Matcher
	params *paramState
}

// Bound is a binding in effect, its matchResources parsed.
type Bound[B Binding] struct {
	Binding B
	// Match is nil for a binding that applies wherever its policy
	// matches.
	Match *Matcher
}

// Snapshot is the policies and bindings in effect at one moment; it is
// never changed.
type Snapshot[P Policy, B Binding, C any] struct {
	// Policies are by name.
	Policies map[string]*Hook[P, C]
	// Bindings are in name order; each names its policy.
	Bindings []*Bound[B]
}

// cached is a policy generation compiled.
type cached[P Policy, C any] struct {
	policy   P
	compiled C
	match    *Matcher
}

// Source holds the policies and bindings of one kind in effect. Run keeps
// it equal to the stored ones; SetPolicies and SetBindings set it
// directly (a server without storage, a test). A policy is compiled once
// per generation, by the compile function its plugin gives NewSource.
type Source[P Policy, B Binding, C any] struct {
	compile  func(P) C
	mu       sync.Mutex // serializes writers
	snap     atomic.Pointer[Snapshot[P, B, C]]
	policies []P
	bindings []B
	havePols bool
	haveBnds bool
	cache    map[string]*cached[P, C] // by name
	synced   chan struct{}
	once     sync.Once
	params   params
	// resources is what WatchParams was given; nsResource the namespaces
	// found in it.
	resources  atomic.Pointer[Resources]
	nsResource atomic.Pointer[registry.Resource]
}

// NewSource returns a Source that has not synced and compiles each
// policy generation with compile.
func NewSource[P Policy, B Binding, C any](compile func(P) C) *Source[P, B, C] {
	s := &Source[P, B, C]{compile: compile, cache: map[string]*cached[P, C]{}, synced: make(chan struct{}),
		params: params{running: map[meta.GroupVersionKind]*paramInformer{}}}
	s.snap.Store(&Snapshot[P, B, C]{})
	return s
}

// Synced closes once the Source holds both policies and bindings.
func (s *Source[P, B, C]) Synced() <-chan struct{} { return s.synced }

// SetPolicies replaces the policies.
func (s *Source[P, B, C]) SetPolicies(ps []P) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies, s.havePols = ps, true
	s.rebuild()
}

// SetBindings replaces the bindings.
func (s *Source[P, B, C]) SetBindings(bs []B) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindings, s.haveBnds = bs, true
	s.rebuild()
}

// Policies returns the policies last set.
func (s *Source[P, B, C]) Policies() []P {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policies
}

// Current returns the snapshot in effect, synced or not.
func (s *Source[P, B, C]) Current() *Snapshot[P, B, C] { return s.snap.Load() }

func (s *Source[P, B, C]) rebuild() {
	snap := &Snapshot[P, B, C]{Policies: map[string]*Hook[P, C]{}}
	cache := map[string]*cached[P, C]{}
	for _, p := range s.policies {
		om := p.GetObjectMeta()
		c, ok := s.cache[om.Name]
		if ok {
			old := c.policy.GetObjectMeta()
			ok = old.UID == om.UID && old.Generation == om.Generation && om.Generation != 0
		}
		if !ok {
			c = &cached[P, C]{policy: p, compiled: s.compile(p)}
			if m := p.GetMatchConstraints(); m != nil {
				c.match = NewMatcher(m)
			}
		}
		cache[om.Name] = c
		snap.Policies[om.Name] = &Hook[P, C]{Policy: c.policy, Compiled: c.compiled, Match: c.match}
	}
	s.cache = cache
	bs := slices.SortedFunc(slices.Values(s.bindings), func(a, b B) int {
		return cmp.Compare(a.GetObjectMeta().Name, b.GetObjectMeta().Name)
	})
	bound := map[string]bool{}
	for _, b := range bs {
		nb := &Bound[B]{Binding: b}
		if m := b.GetMatchResources(); m != nil {
			nb.Match = NewMatcher(m)
		}
		snap.Bindings = append(snap.Bindings, nb)
		bound[b.GetPolicyName()] = true
	}
	// As kube-apiserver, only bound policies' paramKinds are watched.
	used := map[meta.GroupVersionKind]bool{}
	s.params.unresolved = false
	for name, h := range snap.Policies {
		if k := h.Policy.GetParamKind(); k != nil && bound[name] {
			h.params = s.params.ensure(k, used)
		}
	}
	s.params.stopUnused(used)
	s.snap.Store(snap)
	if s.havePols && s.haveBnds {
		s.once.Do(func() { close(s.synced) })
	}
}

// Wait returns the snapshot in effect, waiting up to timeout for the
// first sync as kube-apiserver's plugins wait for their informers; a
// write that comes too early is refused as kube refuses it.
func (s *Source[P, B, C]) Wait(ctx context.Context, a *admission.Attributes, timeout time.Duration) (*Snapshot[P, B, C], error) {
	select {
	case <-s.synced:
		return s.snap.Load(), nil
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.synced:
		return s.snap.Load(), nil
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, meta.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("not yet ready to handle request"))
}

// Stores are the stored policies and bindings of one kind, the sources of
// Run's informers.
type Stores[P Policy, B Binding] struct {
	Policies informer.Source[P]
	Bindings informer.Source[B]
	// PolicyResource and BindingResource name the informers (their
	// resources' names).
	PolicyResource, BindingResource string
	// PoliciesChanged, when not nil, is called after each change of the
	// policies in effect (ValidatingAdmissionPolicy's type checker).
	PoliciesChanged func()
}

// Run keeps s equal to the policies and bindings in stores until ctx
// ends: an informer per kind, each change applied at once. Params and
// namespaceObject are read from resources (see WatchParams); nil
// resources serve neither.
func (s *Source[P, B, C]) Run(ctx context.Context, stores Stores[P, B], resources Resources, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if resources != nil {
		wait := s.WatchParams(ctx, resources, log)
		defer wait()
	}
	// The lock keeps a List taken earlier from being stored after a
	// later one.
	var mu sync.Mutex
	watch(ctx, &wg, &mu, stores.Policies, stores.PolicyResource, log, func(ps []P) {
		s.SetPolicies(ps)
		if stores.PoliciesChanged != nil {
			stores.PoliciesChanged()
		}
	})
	watch(ctx, &wg, &mu, stores.Bindings, stores.BindingResource, log, s.SetBindings)
}

// watch runs an informer on src that hands set every list of it, from the
// first sync on (the first list may be empty and call no handler).
func watch[T meta.Object](ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, src informer.Source[T], name string, log *slog.Logger, set func([]T)) {
	var inf *informer.Informer[T]
	changed := func() {
		mu.Lock()
		defer mu.Unlock()
		if inf.HasSynced() {
			set(inf.List())
		}
	}
	inf = informer.New(informer.Config[T]{
		Source: src, Name: name, Logger: log,
		Handlers: informer.Handlers[T]{
			OnAdd:    func(T) { changed() },
			OnUpdate: func(_, _ T) { changed() },
			OnDelete: func(T) { changed() },
		},
	})
	wg.Go(func() { inf.Run(ctx) })
	wg.Go(func() {
		if inf.WaitForSync(ctx) == nil {
			changed()
		}
	})
}

// Notifying is Resources that tell of every change of what they serve,
// as server.DelegationTarget's WatchAPIGroups does: f is called after
// each (a CRD's custom resources served or gone) until stop is called,
// and must not block.
type Notifying interface {
	Resources
	WatchAPIGroups(f func()) (stop func())
}

// WatchParams reads the params of bound policies with a paramKind, and
// the namespaces namespaceObject shows, from resources until ctx ends: an
// informer per paramKind, started when a bound policy first names it,
// stopped when none does or its resource is no longer served. A
// paramKind no resource serves is looked up again at each change
// Notifying resources tell of (a CRD created after the policy), or, for
// other resources, every second as kube-apiserver's policy source
// retries. The bound paramKinds are resolved before it returns; the
// returned wait blocks until ctx has ended and every informer has
// stopped. Run calls it; call it alone for a Source kept by SetPolicies
// and SetBindings.
func (s *Source[P, B, C]) WatchParams(ctx context.Context, resources Resources, log *slog.Logger) (wait func()) {
	if log == nil {
		log = slog.Default()
	}
	// changed is signalled at each change of what resources serve; nil
	// polls every second instead.
	var changed chan struct{}
	stop := func() {}
	if n, ok := resources.(Notifying); ok {
		changed = make(chan struct{}, 1)
		stop = n.WatchAPIGroups(func() {
			select {
			case changed <- struct{}{}:
			default: // one pending look covers every change before it
			}
		})
	}
	s.mu.Lock()
	s.params.resources, s.params.ctx, s.params.log = resources, ctx, log
	s.resources.Store(&resources)
	s.rebuild()
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stop()
		s.runParams(ctx, changed)
	}()
	return func() { <-done }
}

// runParams resolves the bound paramKinds again when changed is
// signalled, or every second when changed is nil, until ctx ends.
func (s *Source[P, B, C]) runParams(ctx context.Context, changed <-chan struct{}) {
	var tick <-chan time.Time
	if changed == nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.params.stopUnused(nil)
			s.mu.Unlock()
			s.params.wg.Wait()
			return
		case <-tick:
		case <-changed:
		}
		s.mu.Lock()
		if s.params.dropGone() || s.params.unresolved {
			s.rebuild()
		}
		s.mu.Unlock()
	}
}

// NamespaceObject returns the namespace of a namespaced write as the
// namespaceObject variable shows it (kube's Namespace type: metadata's
// public fields, spec, status): nil for a cluster-scoped write, a write to
// a namespace itself, or before WatchParams or on a server that serves no
// namespaces. A namespace that cannot be read is an error (its Status).
func (s *Source[P, B, C]) NamespaceObject(ctx context.Context, a *admission.Attributes) (map[string]any, error) {
	return namespaceObject(ctx, s.namespaces(), a)
}

// namespaces returns the resource serving namespaces, nil before
// WatchParams or when none is served; found once, as namespaces do not
// come and go.
func (s *Source[P, B, C]) namespaces() registry.Resource {
	if r := s.nsResource.Load(); r != nil {
		return *r
	}
	rs := s.resources.Load()
	if rs == nil {
		return nil
	}
	r := namespacesOf(*rs)
	if r == nil {
		return nil
	}
	s.nsResource.Store(&r)
	return r
}
