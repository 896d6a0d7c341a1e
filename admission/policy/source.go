package policy

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// matcher is a MatchResources with its selectors parsed.
type matcher struct {
	m                 *registration.MatchResources
	equivalent        bool
	namespaceSelector meta.Selector
	objectSelector    meta.Selector
	err               error
}

func newMatcher(m *registration.MatchResources) *matcher {
	out := &matcher{m: m, equivalent: m.MatchPolicy == nil || *m.MatchPolicy == registration.Equivalent,
		namespaceSelector: meta.Everything(), objectSelector: meta.Everything()}
	if m.NamespaceSelector != nil {
		out.namespaceSelector, out.err = m.NamespaceSelector.AsSelector()
	}
	if m.ObjectSelector != nil && out.err == nil {
		out.objectSelector, out.err = m.ObjectSelector.AsSelector()
	}
	return out
}

type namedExpr struct {
	name string
	expr *cel.Expression
}

type validation struct {
	v       registration.Validation
	expr    *cel.Expression
	message *cel.Expression // nil without a messageExpression
}

// compiled is one generation of a policy, its expressions compiled.
type compiled struct {
	policy          *registration.ValidatingAdmissionPolicy
	failOpen        bool
	match           *matcher
	matchConditions []namedExpr
	variables       []namedExpr
	validations     []validation
	// auditAnnotations are by key.
	auditAnnotations []namedExpr
	// err is a policy that does not compile (stored before a server that
	// refuses it, or by another version): its failurePolicy decides.
	err error
}

func compile(p *registration.ValidatingAdmissionPolicy) *compiled {
	c := &compiled{policy: p, failOpen: p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == registration.Ignore}
	if p.Spec.MatchConstraints != nil {
		c.match = newMatcher(p.Spec.MatchConstraints)
	}
	hasParams := p.Spec.ParamKind != nil
	comp, err := registration.PolicyCompiler(hasParams, false)
	if err != nil {
		c.err = err
		return c
	}
	msgComp, err := registration.PolicyCompiler(hasParams, true)
	if err != nil {
		c.err = err
		return c
	}
	fail := func(what string, err error) *compiled {
		c.err = fmt.Errorf("%s: %w", what, err)
		return c
	}
	for _, mc := range p.Spec.MatchConditions {
		e, err := comp.Compile(mc.Expression, types.BoolType)
		if err != nil {
			return fail("compilation failed for match condition "+mc.Name, err)
		}
		c.matchConditions = append(c.matchConditions, namedExpr{mc.Name, e})
	}
	for _, v := range p.Spec.Variables {
		e, err := comp.Compile(v.Expression, nil)
		if err != nil {
			return fail("compilation failed for variable "+v.Name, err)
		}
		c.variables = append(c.variables, namedExpr{v.Name, e})
	}
	for _, v := range p.Spec.Validations {
		e, err := comp.Compile(v.Expression, types.BoolType)
		if err != nil {
			return fail(fmt.Sprintf("compilation failed for expression '%s'", v.Expression), err)
		}
		cv := validation{v: v, expr: e}
		if v.MessageExpression != "" {
			// A messageExpression that does not compile falls back to the
			// message at run time, as an evaluation error does.
			cv.message, _ = msgComp.Compile(v.MessageExpression, types.StringType)
		}
		c.validations = append(c.validations, cv)
	}
	for _, aa := range p.Spec.AuditAnnotations {
		e, err := comp.Compile(aa.ValueExpression, nil)
		if err != nil {
			return fail(fmt.Sprintf("compilation failed for audit annotation '%s'", aa.Key), err)
		}
		c.auditAnnotations = append(c.auditAnnotations, namedExpr{aa.Key, e})
	}
	return c
}

// binding is a binding with its actions and matcher.
type binding struct {
	b                 *registration.ValidatingAdmissionPolicyBinding
	match             *matcher // nil: everything the policy matches
	deny, warn, audit bool
}

// snapshot is the policies and bindings in effect.
type snapshot struct {
	policies map[string]*compiled
	// params are the paramKinds of the bound policies with one, by
	// policy name.
	params map[string]*paramState
	// bindings are in name order; each names its policy.
	bindings []*binding
}

// Source holds the policies and bindings in effect. Run keeps it equal to
// the stored ones; SetPolicies and SetBindings set it directly (a server
// without storage, a test). A policy is compiled once per generation.
type Source struct {
	mu       sync.Mutex // serializes writers
	snap     atomic.Pointer[snapshot]
	policies []*registration.ValidatingAdmissionPolicy
	bindings []*registration.ValidatingAdmissionPolicyBinding
	havePols bool
	haveBnds bool
	cache    map[string]*compiled // by name
	synced   chan struct{}
	once     sync.Once
	params   params
	// resources is what startParams was given; nsResource the
	// namespaces found in it.
	resources  atomic.Pointer[Resources]
	nsResource atomic.Pointer[registry.Resource]
}

// NewSource returns a Source that has not synced.
func NewSource() *Source {
	return &Source{cache: map[string]*compiled{}, synced: make(chan struct{}),
		params: params{running: map[meta.GroupVersionKind]*paramInformer{}}}
}

// Synced closes once the Source holds both policies and bindings.
func (s *Source) Synced() <-chan struct{} { return s.synced }

// SetPolicies replaces the policies.
func (s *Source) SetPolicies(ps []*registration.ValidatingAdmissionPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies, s.havePols = ps, true
	s.rebuild()
}

// SetBindings replaces the bindings.
func (s *Source) SetBindings(bs []*registration.ValidatingAdmissionPolicyBinding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindings, s.haveBnds = bs, true
	s.rebuild()
}

func (s *Source) rebuild() {
	snap := &snapshot{policies: map[string]*compiled{}, params: map[string]*paramState{}}
	cache := map[string]*compiled{}
	for _, p := range s.policies {
		c, ok := s.cache[p.Name]
		if !ok || c.policy.UID != p.UID || c.policy.Generation != p.Generation || p.Generation == 0 {
			c = compile(p)
		}
		cache[p.Name], snap.policies[p.Name] = c, c
	}
	s.cache = cache
	bs := slices.SortedFunc(slices.Values(s.bindings), func(a, b *registration.ValidatingAdmissionPolicyBinding) int {
		return cmp.Compare(a.Name, b.Name)
	})
	for _, b := range bs {
		nb := &binding{b: b, deny: slices.Contains(b.Spec.ValidationActions, registration.Deny),
			warn: slices.Contains(b.Spec.ValidationActions, registration.Warn), audit: slices.Contains(b.Spec.ValidationActions, registration.Audit)}
		if b.Spec.MatchResources != nil {
			nb.match = newMatcher(b.Spec.MatchResources)
		}
		snap.bindings = append(snap.bindings, nb)
	}
	// As kube-apiserver, only bound policies' paramKinds are watched.
	used := map[meta.GroupVersionKind]bool{}
	s.params.unresolved = false
	for _, name := range boundPolicies(s.bindings) {
		if c := snap.policies[name]; c != nil && c.policy.Spec.ParamKind != nil {
			snap.params[name] = s.params.ensure(c.policy.Spec.ParamKind, used)
		}
	}
	s.params.stopUnused(used)
	s.snap.Store(snap)
	if s.havePols && s.haveBnds {
		s.once.Do(func() { close(s.synced) })
	}
}

// Run keeps s equal to the policies and bindings in stores until ctx
// ends: an informer per kind, each change applied at once. Params are
// read from resources (see RunParams), and each policy's generation is
// type-checked against the schemas of the resources it matches into its
// status (TypeCheck); nil resources serve no params and check nothing.
func (s *Source) Run(ctx context.Context, stores *registration.PolicyStores, resources Resources, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if resources != nil {
		s.startParams(ctx, resources, log)
		wg.Go(func() { s.runParams(ctx) })
	}
	var pi *informer.Informer[*registration.ValidatingAdmissionPolicy]
	var bi *informer.Informer[*registration.ValidatingAdmissionPolicyBinding]
	// changed wakes the type checker when the policies change.
	changed := make(chan struct{}, 1)
	// The handlers run after the informer's store has the change; the
	// lock keeps a List taken earlier from being stored after a later one.
	var mu sync.Mutex
	policies := func() {
		mu.Lock()
		defer mu.Unlock()
		if pi.HasSynced() {
			s.SetPolicies(pi.List())
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
	bindings := func() {
		mu.Lock()
		defer mu.Unlock()
		if bi.HasSynced() {
			s.SetBindings(bi.List())
		}
	}
	pi = informer.New(informer.Config[*registration.ValidatingAdmissionPolicy]{
		Source: stores.Policies, Name: "validatingadmissionpolicies", Logger: log,
		Handlers: informer.Handlers[*registration.ValidatingAdmissionPolicy]{
			OnAdd:    func(*registration.ValidatingAdmissionPolicy) { policies() },
			OnUpdate: func(_, _ *registration.ValidatingAdmissionPolicy) { policies() },
			OnDelete: func(*registration.ValidatingAdmissionPolicy) { policies() },
		},
	})
	bi = informer.New(informer.Config[*registration.ValidatingAdmissionPolicyBinding]{
		Source: stores.Bindings, Name: "validatingadmissionpolicybindings", Logger: log,
		Handlers: informer.Handlers[*registration.ValidatingAdmissionPolicyBinding]{
			OnAdd:    func(*registration.ValidatingAdmissionPolicyBinding) { bindings() },
			OnUpdate: func(_, _ *registration.ValidatingAdmissionPolicyBinding) { bindings() },
			OnDelete: func(*registration.ValidatingAdmissionPolicyBinding) { bindings() },
		},
	})
	if resources != nil {
		wg.Go(func() { runTypeChecking(ctx, stores.Policies, pi.List, resources, changed, log) })
	}
	wg.Go(func() { pi.Run(ctx) })
	wg.Go(func() { bi.Run(ctx) })
	// The first list may be empty and call no handler.
	wg.Go(func() {
		if pi.WaitForSync(ctx) == nil {
			policies()
		}
	})
	wg.Go(func() {
		if bi.WaitForSync(ctx) == nil {
			bindings()
		}
	})
}

// RunParams reads the params of bound policies with a paramKind from
// resources until ctx ends: an informer per paramKind, started when a
// bound policy first names it, stopped when none does or its resource is
// no longer served. A paramKind no resource serves is looked up again
// every second (a CRD created after the policy), as kube-apiserver does.
// Run calls it; call it alone for a Source kept by SetPolicies and
// SetBindings.
func (s *Source) RunParams(ctx context.Context, resources Resources, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	s.startParams(ctx, resources, log)
	s.runParams(ctx)
}

func (s *Source) startParams(ctx context.Context, resources Resources, log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.params.resources, s.params.ctx, s.params.log = resources, ctx, log
	s.resources.Store(&resources)
	s.rebuild()
}

func (s *Source) runParams(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.params.stopUnused(nil)
			s.mu.Unlock()
			s.params.wg.Wait()
			return
		case <-t.C:
			s.mu.Lock()
			if s.params.dropGone() || s.params.unresolved {
				s.rebuild()
			}
			s.mu.Unlock()
		}
	}
}
