package webhook

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
)

// hook is one webhook of a configuration, its selectors parsed once per
// configuration generation.
type hook struct {
	// config and name identify the webhook; key is both, for tracking
	// reinvocations.
	config, name, key string
	clientConfig      registration.WebhookClientConfig
	rules             []registration.RuleWithOperations
	failOpen          bool
	equivalent        bool
	namespaceSelector meta.Selector
	objectSelector    meta.Selector
	selectorErr       error
	noSideEffects     bool
	timeout           time.Duration
	reinvokeIfNeeded  bool
	matchConditions   []registration.MatchCondition
}

func newHook(config, name string, cc registration.WebhookClientConfig, rules []registration.RuleWithOperations,
	fp *registration.FailurePolicyType, mp *registration.MatchPolicyType, ns, obj *meta.LabelSelector,
	se *registration.SideEffectClass, timeout *int32, mcs []registration.MatchCondition) *hook {
	h := &hook{config: config, name: name, key: config + "/" + name, clientConfig: cc, rules: rules,
		failOpen:        fp != nil && *fp == registration.Ignore,
		equivalent:      mp == nil || *mp == registration.Equivalent,
		noSideEffects:   se != nil && (*se == registration.SideEffectClassNone || *se == registration.SideEffectClassNoneOnDryRun),
		timeout:         time.Duration(registration.DefaultTimeoutSeconds) * time.Second,
		matchConditions: mcs,
	}
	if timeout != nil {
		h.timeout = time.Duration(*timeout) * time.Second
	}
	// A nil selector is the defaulted empty one: everything.
	h.namespaceSelector, h.objectSelector = meta.Everything(), meta.Everything()
	if ns != nil {
		h.namespaceSelector, h.selectorErr = ns.AsSelector()
	}
	if obj != nil && h.selectorErr == nil {
		h.objectSelector, h.selectorErr = obj.AsSelector()
	}
	return h
}

// Source holds the webhook configurations in effect, in the order they
// are called: by configuration name, then as listed. Run keeps it equal
// to the stored configurations; SetMutating and SetValidating set it
// directly (a server without storage, a test).
type Source struct {
	mutating, validating atomic.Pointer[[]*hook]
	// synced closes once both kinds were set.
	synced     chan struct{}
	syncedOnce sync.Once
}

// NewSource returns a Source that has not synced: until it is, admission
// waits for it and then refuses writes, as kube-apiserver's does.
func NewSource() *Source { return &Source{synced: make(chan struct{})} }

// SetMutating replaces the mutating webhooks.
func (s *Source) SetMutating(cs []*registration.MutatingWebhookConfiguration) {
	cs = slices.SortedFunc(slices.Values(cs), func(a, b *registration.MutatingWebhookConfiguration) int { return cmp.Compare(a.Name, b.Name) })
	var hooks []*hook
	for _, c := range cs {
		for _, w := range c.Webhooks {
			h := newHook(c.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector,
				w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.MatchConditions)
			h.reinvokeIfNeeded = w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == registration.IfNeededReinvocationPolicy
			hooks = append(hooks, h)
		}
	}
	s.mutating.Store(&hooks)
	s.markSynced()
}

// SetValidating replaces the validating webhooks.
func (s *Source) SetValidating(cs []*registration.ValidatingWebhookConfiguration) {
	cs = slices.SortedFunc(slices.Values(cs), func(a, b *registration.ValidatingWebhookConfiguration) int { return cmp.Compare(a.Name, b.Name) })
	var hooks []*hook
	for _, c := range cs {
		for _, w := range c.Webhooks {
			hooks = append(hooks, newHook(c.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy,
				w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.MatchConditions))
		}
	}
	s.validating.Store(&hooks)
	s.markSynced()
}

func (s *Source) markSynced() {
	if s.mutating.Load() != nil && s.validating.Load() != nil {
		s.syncedOnce.Do(func() { close(s.synced) })
	}
}

// Synced closes once the Source holds both kinds of configuration.
func (s *Source) Synced() <-chan struct{} { return s.synced }

func (s *Source) hooks(mutating bool) []*hook {
	p := s.validating.Load()
	if mutating {
		p = s.mutating.Load()
	}
	if p == nil {
		return nil
	}
	return *p
}

// Run keeps s equal to the configurations in stores until ctx ends: an
// informer per kind, each change applied at once.
func (s *Source) Run(ctx context.Context, stores *registration.Stores, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var mi *informer.Informer[*registration.MutatingWebhookConfiguration]
	var vi *informer.Informer[*registration.ValidatingWebhookConfiguration]
	// The handlers run on each informer's goroutine after its store has
	// the change; List then reads the whole current set. The lock keeps a
	// List taken earlier from being stored after a later one.
	var mu sync.Mutex
	mutated := func() {
		mu.Lock()
		defer mu.Unlock()
		if mi.HasSynced() {
			s.SetMutating(mi.List())
		}
	}
	validated := func() {
		mu.Lock()
		defer mu.Unlock()
		if vi.HasSynced() {
			s.SetValidating(vi.List())
		}
	}
	mi = informer.New(informer.Config[*registration.MutatingWebhookConfiguration]{
		Source: stores.Mutating, Name: "mutatingwebhookconfigurations", Logger: log,
		Handlers: informer.Handlers[*registration.MutatingWebhookConfiguration]{
			OnAdd:    func(*registration.MutatingWebhookConfiguration) { mutated() },
			OnUpdate: func(_, _ *registration.MutatingWebhookConfiguration) { mutated() },
			OnDelete: func(*registration.MutatingWebhookConfiguration) { mutated() },
		},
	})
	vi = informer.New(informer.Config[*registration.ValidatingWebhookConfiguration]{
		Source: stores.Validating, Name: "validatingwebhookconfigurations", Logger: log,
		Handlers: informer.Handlers[*registration.ValidatingWebhookConfiguration]{
			OnAdd:    func(*registration.ValidatingWebhookConfiguration) { validated() },
			OnUpdate: func(_, _ *registration.ValidatingWebhookConfiguration) { validated() },
			OnDelete: func(*registration.ValidatingWebhookConfiguration) { validated() },
		},
	})
	wg.Go(func() { mi.Run(ctx) })
	wg.Go(func() { vi.Run(ctx) })
	// The first list may be empty and call no handler.
	wg.Go(func() {
		if mi.WaitForSync(ctx) == nil {
			mutated()
		}
	})
	wg.Go(func() {
		if vi.WaitForSync(ctx) == nil {
			validated()
		}
	})
}
