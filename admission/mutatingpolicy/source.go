package mutatingpolicy

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apikit-dev/apikit/admission/policy"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// binding is a binding with its matcher.
type binding struct {
	b     *registration.MutatingAdmissionPolicyBinding
	match *matcher // nil: everything the policy matches
}

// snapshot is the policies and bindings in effect.
type snapshot struct {
	policies map[string]*compiled
	// bindings are in name order; each names its policy.
	bindings []*binding
}

// Source holds the policies and bindings in effect. Run keeps it equal to
// the stored ones; SetPolicies and SetBindings set it directly (a server
// without storage, a test). A policy is compiled once per generation.
type Source struct {
	mu       sync.Mutex // serializes writers
	snap     atomic.Pointer[snapshot]
	policies []*registration.MutatingAdmissionPolicy
	bindings []*registration.MutatingAdmissionPolicyBinding
	havePols bool
	haveBnds bool
	cache    map[string]*compiled // by name
	synced   chan struct{}
	once     sync.Once
	// resources finds the namespaces namespaceObject reads; nil until
	// Run (then none is shown).
	resources atomic.Pointer[policy.Resources]
	nsOnce    sync.Once
	nsRes     registry.Resource
}

// namespaces returns the resource serving namespaces, nil before Run or
// when none is served; found once, as namespaces do not come and go.
func (s *Source) namespaces() registry.Resource {
	rs := s.resources.Load()
	if rs == nil {
		return nil
	}
	s.nsOnce.Do(func() { s.nsRes = policy.NamespacesOf(*rs) })
	return s.nsRes
}

// NewSource returns a Source that has not synced.
func NewSource() *Source {
	s := &Source{cache: map[string]*compiled{}, synced: make(chan struct{})}
	s.snap.Store(&snapshot{})
	return s
}

// Synced closes once the Source holds both policies and bindings.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// SetPolicies replaces the policies.
func (s *Source) SetPolicies(ps []*registration.MutatingAdmissionPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies, s.havePols = ps, true
	s.rebuild()
}

// SetBindings replaces the bindings.
func (s *Source) SetBindings(bs []*registration.MutatingAdmissionPolicyBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindings, s.haveBnds = bs, true
	s.rebuild()
}

func (s *Source) rebuild() {
	snap := &snapshot{policies: map[string]*compiled{}}
	cache := map[string]*compiled{}
	for _, p := range s.policies {
		c, ok := s.cache[p.Name]
		if !ok || c.policy.UID != p.UID || c.policy.Generation != p.Generation || p.Generation == 0 {
			c = compile(p)
		}
		cache[p.Name], snap.policies[p.Name] = c, c
	}
	s.cache = cache
	bs := slices.SortedFunc(slices.Values(s.bindings), func(a, b *registration.MutatingAdmissionPolicyBinding) int {
		return cmp.Compare(a.Name, b.Name)
	})
	for _, b := range bs {
		nb := &binding{b: b}
		if b.Spec.MatchResources != nil {
			nb.match = newMatcher(b.Spec.MatchResources)
		}
		snap.bindings = append(snap.bindings, nb)
	}
	s.snap.Store(snap)
	if s.havePols && s.haveBnds {
		s.once.Do(func() { close(s.synced) })
	}
}

// Run keeps s equal to the policies and bindings in stores until ctx
// ends: an informer per kind, each change applied at once. rs finds the
// namespaces the namespaceObject variable shows (nil: none).
func (s *Source) Run(ctx context.Context, stores *registration.MutatingPolicyStores, rs policy.Resources, log *slog.Logger) {
	if rs != nil {
		s.resources.Store(&rs)
	}
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// The lock keeps a List taken earlier from being stored after a
	// later one.
	var mu sync.Mutex
	watch(ctx, &wg, &mu, stores.Policies, "mutatingadmissionpolicies", log, s.SetPolicies)
	watch(ctx, &wg, &mu, stores.Bindings, "mutatingadmissionpolicybindings", log, s.SetBindings)
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
