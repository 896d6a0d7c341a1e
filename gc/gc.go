package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// byOwner indexes the nodes by the uids of their owners. Owners are found
// by name and compared by uid (cachedLocked): a uid index would cost ~150
// bytes an object, for every object followed.
const byOwner = "owner"

// Config says what a Collector collects.
type Config struct {
	// Resources are the resources collected, one served version of each
	// (others of the same group and kind are skipped). Owners of kinds not
	// here are never taken for gone.
	Resources []registry.Resource
	// Discover, when set, replaces Resources: the collector collects what
	// it returns when it starts and again after every receive from
	// Rediscover, starting an informer for each kind that came and
	// stopping that of each kind that went (the custom resources of a
	// CRD created or deleted). Install gives it the resources its
	// server's chain serves (server.Resources of APIGroups) and
	// WatchAPIGroups' signal.
	Discover   func() []registry.Resource
	Rediscover <-chan struct{}
	// Complete, when set, reports whether Discover returns every kind
	// served (APIGroupsSynced of a server): until it does, owners being
	// deleted with the orphan or foregroundDeletion finalizer wait, since
	// their dependents of a kind not yet discovered are not yet known. It
	// is asked before each Discover.
	Complete func() bool
	// RetryInterval is how long a failed object waits before it is tried
	// again; the default is one second.
	RetryInterval time.Duration
	// SyncTimeout bounds how long a kind's informer that has not listed
	// holds orphaning and foreground deletions (and the collector's
	// start): the default is 30 s, kube's garbage collector's sync period,
	// after which kube's collector also goes on without it. A resource
	// that cannot be listed (an aggregated API server refusing the list)
	// must not stop every cascade of the control plane.
	SyncTimeout time.Duration
	// Logger receives failures; nil is slog.Default().
	Logger *slog.Logger
}

// Collector is a garbage collector; see the package documentation. Run it
// once.
type Collector struct {
	discover   func() []registry.Resource
	rediscover <-chan struct{}
	complete   func() bool
	retry      time.Duration
	syncWait   time.Duration
	logger     *slog.Logger

	mu     sync.Mutex
	byKind map[meta.GroupKind]*kind // the kinds collected now
	// discoveredAll says byKind has every kind served (Config.Complete
	// at the last resync).
	discoveredAll bool
	queue         queue
	wake          chan struct{}
	pending       map[ref]struct{} // failed, tried again after retry

	informers sync.WaitGroup // every kind's informer goroutine
}

// kind is one collected resource and its informer, from when it is
// discovered until it is no longer served.
type kind struct {
	gk meta.GroupKind
	// res is the resource's newest served form: a CRD's custom resources
	// are served by a new registry.Resource after each change of the CRD,
	// over the same storage, so its informer keeps running.
	res  atomic.Pointer[registry.Resource]
	inf  *informer.Informer[*node]
	stop context.CancelFunc
	done chan struct{} // closed when inf.Run returned
	// started is when the informer started: past Config.SyncTimeout, an
	// informer that has not listed no longer holds the collector.
	started time.Time
}

func (k *kind) resource() registry.Resource { return *k.res.Load() }

// ref names one object of a collected kind.
type ref struct {
	k         *kind
	namespace string
	name      string
}

// New returns a Collector of cfg's resources.
func New(cfg Config) *Collector {
	c := &Collector{
		discover:   cfg.Discover,
		rediscover: cfg.Rediscover,
		complete:   cfg.Complete,
		retry:      cfg.RetryInterval,
		syncWait:   cfg.SyncTimeout,
		logger:     cfg.Logger,
		byKind:     map[meta.GroupKind]*kind{},
		wake:       make(chan struct{}, 1),
	}
	if c.discover == nil {
		static := cfg.Resources
		c.discover = func() []registry.Resource { return static }
	}
	if c.retry <= 0 {
		c.retry = time.Second
	}
	if c.syncWait <= 0 {
		c.syncWait = 30 * time.Second
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}

// newKind makes the kind of res and its informer, not yet running.
func (c *Collector) newKind(gk meta.GroupKind, res registry.Resource) *kind {
	k := &kind{gk: gk, done: make(chan struct{})}
	k.res.Store(&res)
	k.inf = informer.New(informer.Config[*node]{
		Source: informer.ItemSource(k.resource, nodeOf),
		Name:   res.Info().Resource + "." + gk.Group,
		Logger: c.logger,
		// Only the nodes collecting reads from the cache: dependents
		// (objects with owners) and objects being deleted or held by
		// the orphan or foregroundDeletion finalizer. An object with
		// none of these is only ever an owner, whose existence
		// collecting reads live (ownerState), and whose deletion
		// reaches OnDelete stored or not: most objects of a cluster
		// cost the collector no memory (gc TestMemoryPerObject).
		Keep: (*node).needed,
		Indexers: map[string]informer.IndexFunc[*node]{
			byOwner: func(o *node) []string {
				owners := o.owners()
				if len(owners) == 0 {
					return nil
				}
				out := make([]string, 0, len(owners))
				for _, r := range owners {
					out = append(out, r.UID)
				}
				return out
			},
		},
		Handlers: informer.Handlers[*node]{
			OnAdd:    func(o *node) { c.changed(k, o, false) },
			OnUpdate: func(_, o *node) { c.changed(k, o, false) },
			OnDelete: func(o *node) { c.changed(k, o, true) },
		},
	})
	return k
}

// resync makes the kinds collected those of the resources discovered now:
// an informer starts for each new kind, the informer of each kind no
// longer served stops (and is waited for), and a kind still served reads
// and writes through its newest resource.
func (c *Collector) resync(ctx context.Context) {
	// Complete is asked before Discover: what Discover returns after it
	// said so has every kind. Asked live in synced instead, it could say
	// so before the kinds that made it so were discovered.
	complete := c.complete == nil || c.complete()
	want := map[meta.GroupKind]registry.Resource{}
	for _, res := range c.discover() {
		info := res.Info()
		gk := meta.GroupKind{Group: info.GroupVersion.Group, Kind: info.Kind}
		if want[gk] != nil || !info.Serves("list") || !info.Serves("watch") || !info.Serves("delete") {
			continue
		}
		want[gk] = res
	}
	var added, gone []*kind
	c.mu.Lock()
	c.discoveredAll = complete
	for gk, k := range c.byKind {
		if want[gk] == nil {
			delete(c.byKind, gk)
			gone = append(gone, k)
		}
	}
	for gk, res := range want {
		if k := c.byKind[gk]; k != nil {
			k.res.Store(&res)
			continue
		}
		k := c.newKind(gk, res)
		c.byKind[gk] = k
		added = append(added, k)
	}
	c.mu.Unlock()
	for _, k := range gone {
		k.stop()
		<-k.done
		c.logger.Debug("garbage collector: stopped collecting", "group", k.gk.Group, "kind", k.gk.Kind)
	}
	for _, k := range added {
		kctx, cancel := context.WithCancel(ctx)
		k.stop = cancel
		k.started = time.Now()
		c.informers.Go(func() {
			defer close(k.done)
			k.inf.Run(kctx)
		})
	}
}

// kinds are the kinds collected now.
func (c *Collector) kinds() []*kind {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kindsLocked()
}

func (c *Collector) kindsLocked() []*kind {
	out := make([]*kind, 0, len(c.byKind))
	for _, k := range c.byKind {
		out = append(out, k)
	}
	return out
}

// collected reports whether k is still collected (not stopped, or
// replaced by a kind of the same name discovered again).
func (c *Collector) collected(k *kind) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byKind[k.gk] == k
}

// errNotSynced defers an owner's orphaning or foreground deletion until
// every kind is discovered (Config.Complete) and every informer has
// listed: one of a kind discovered a moment ago may not yet hold all of
// its dependents.
var errNotSynced = errors.New("waiting for the informers of new kinds to sync")

func (c *Collector) synced() bool {
	c.mu.Lock()
	complete := c.discoveredAll
	c.mu.Unlock()
	if !complete {
		return false
	}
	for _, k := range c.kinds() {
		if !k.inf.HasSynced() && time.Since(k.started) < c.syncWait {
			return false
		}
	}
	return true
}

// changed queues what a change of o may unblock: o itself, its dependents
// (their owner may be gone or going) and its owners (one deleted in the
// foreground may be waiting for o).
func (c *Collector) changed(k *kind, o *node, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !deleted {
		c.queue.add(ref{k, o.namespace, o.name})
	}
	if deleted || o.deleting {
		for _, d := range dependentsOf(c.kindsLocked(), o.UID()) {
			c.queue.add(d)
		}
	}
	for _, or := range o.owners() {
		if owner, ok := c.cachedLocked(or, o.namespace); ok {
			c.queue.add(owner)
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// dependents are the cached objects with an owner reference to uid.
func (c *Collector) dependents(uid string) []ref { return dependentsOf(c.kinds(), uid) }

func dependentsOf(kinds []*kind, uid string) []ref {
	var out []ref
	for _, k := range kinds {
		for _, o := range k.inf.ByIndex(byOwner, uid) {
			out = append(out, ref{k, o.namespace, o.name})
		}
	}
	return out
}

// cachedLocked finds the owner of a reference in the informers' caches:
// by its name, in the dependent's namespace when its kind is namespaced
// (an owner is in its dependent's namespace or cluster-scoped, as kube
// requires), and its uid.
func (c *Collector) cachedLocked(or meta.OwnerReference, namespace string) (ref, bool) {
	k, ok := c.byKind[groupKindOf(or)]
	if !ok {
		return ref{}, false
	}
	if !k.resource().Info().NamespaceScoped {
		namespace = ""
	}
	o, ok := k.inf.Get(namespace, or.Name)
	if !ok || !o.hasUID(or.UID) {
		return ref{}, false
	}
	return ref{k, o.namespace, o.name}, true
}

func (c *Collector) kindOf(or meta.OwnerReference) (*kind, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.byKind[groupKindOf(or)]
	return k, ok
}

func groupKindOf(or meta.OwnerReference) meta.GroupKind {
	group, _, found := strings.Cut(or.APIVersion, "/")
	if !found {
		group = "" // "v1": the core group
	}
	return meta.GroupKind{Group: group, Kind: or.Kind}
}

// Run runs the informers and processes changes until ctx ends; it
// returns once every informer has stopped.
func (c *Collector) Run(ctx context.Context) {
	defer c.informers.Wait()
	c.resync(ctx)
	for _, k := range c.kinds() {
		wctx, cancel := context.WithDeadline(ctx, k.started.Add(c.syncWait))
		err := k.inf.WaitForSync(wctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.logger.Warn("garbage collector: going on without a resource that has not listed", "group", k.gk.Group, "kind", k.gk.Kind, "after", c.syncWait)
		}
	}
	retry := time.NewTicker(c.retry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-c.rediscover:
			if !ok {
				c.rediscover = nil // closed: no more changes
			}
			c.resync(ctx)
			continue
		case <-c.wake:
		case <-retry.C:
			c.mu.Lock()
			for r := range c.pending {
				c.queue.add(r)
			}
			c.pending = nil
			c.mu.Unlock()
		}
		for {
			r, ok := c.next()
			if !ok {
				break
			}
			if err := c.process(ctx, r); err != nil {
				if ctx.Err() != nil {
					return
				}
				if !errors.Is(err, errNotSynced) {
					c.logger.Warn("garbage collector: will retry", "resource", r.k.resource().Info().Resource, "namespace", r.namespace, "name", r.name, "err", err)
				}
				c.mu.Lock()
				if c.pending == nil {
					c.pending = map[ref]struct{}{}
				}
				c.pending[r] = struct{}{}
				c.mu.Unlock()
			}
		}
	}
}

func (c *Collector) next() (ref, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue.pop()
}

// queue holds the objects to process, each once, in the order they were
// first queued. Its slice and set are dropped whenever it empties: a Go
// map keeps the size of its peak (every object at the first list), and
// taking one entry by ranging over it walks its empty slots, a walk of the
// peak's size for each object processed.
type queue struct {
	order  []ref
	queued map[ref]struct{}
}

func (q *queue) len() int { return len(q.order) }

func (q *queue) add(r ref) {
	if _, ok := q.queued[r]; ok {
		return
	}
	if q.queued == nil {
		q.queued = map[ref]struct{}{}
	}
	q.queued[r] = struct{}{}
	q.order = append(q.order, r)
}

func (q *queue) pop() (ref, bool) {
	if len(q.order) == 0 {
		return ref{}, false
	}
	r := q.order[0]
	q.order[0] = ref{} // the array outlives the slice: drop the kind and key
	q.order = q.order[1:]
	delete(q.queued, r)
	if len(q.order) == 0 {
		q.order, q.queued = nil, nil
	}
	return r, true
}

// process brings one object forward: an owner being deleted with the
// orphan or foregroundDeletion finalizer, and a dependent whose owners are
// gone.
func (c *Collector) process(ctx context.Context, r ref) error {
	o, ok := r.k.inf.Get(r.namespace, r.name)
	if !ok || !c.collected(r.k) {
		return nil
	}
	if o.deleting {
		if (o.orphan || o.foreground) && !c.synced() {
			return errNotSynced
		}
		switch {
		case o.orphan:
			return c.orphan(ctx, r, o)
		case o.foreground:
			return c.foreground(ctx, r, o)
		}
	}
	if len(o.owners()) == 0 {
		return nil
	}
	// The references as stored now, not as cached: an orphaning may just
	// have removed the one to an owner that is gone.
	live, err := c.read(ctx, r)
	if err != nil || live == nil {
		return err
	}
	return c.collect(ctx, r, live)
}

// read returns the stored metadata of the object r names (nil if gone).
func (c *Collector) read(ctx context.Context, r ref) (*meta.ObjectMeta, error) {
	it, err := r.k.resource().Get(ctx, r.namespace, r.name, meta.GetOptions{})
	if meta.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", r.namespace, r.name, err)
	}
	m, err := metadataOf(it)
	if err != nil {
		return nil, fmt.Errorf("decoding %s/%s: %w", r.namespace, r.name, err)
	}
	return m, nil
}

// orphan removes the references to o from its dependents, then o's orphan
// finalizer.
func (c *Collector) orphan(ctx context.Context, r ref, o *node) error {
	uid := o.UID()
	for _, d := range c.dependents(uid) {
		err := c.update(ctx, d, func(m *meta.ObjectMeta) bool {
			n := len(m.OwnerReferences)
			m.OwnerReferences = slices.DeleteFunc(m.OwnerReferences, func(or meta.OwnerReference) bool { return or.UID == uid })
			return len(m.OwnerReferences) != n
		})
		if err != nil {
			return fmt.Errorf("orphaning %s/%s: %w", d.namespace, d.name, err)
		}
	}
	return c.removeFinalizer(ctx, r, uid, meta.FinalizerOrphanDependents)
}

// foreground deletes o's dependents (in the foreground those that block
// it) and removes o's foregroundDeletion finalizer once none that blocks
// it is left, as kube's collector waits only for blocking dependents.
func (c *Collector) foreground(ctx context.Context, r ref, o *node) error {
	blocked := false
	uid := o.UID()
	for _, d := range c.dependents(uid) {
		dep, ok := d.k.inf.Get(d.namespace, d.name)
		if !ok {
			continue
		}
		blocks := false
		for _, or := range dep.owners() {
			if or.UID == uid && or.BlockOwnerDeletion != nil && *or.BlockOwnerDeletion {
				blocks = true
			}
		}
		blocked = blocked || blocks
		if dep.deleting {
			continue
		}
		policy := meta.DeletePropagationBackground
		if blocks {
			policy = meta.DeletePropagationForeground
		}
		if err := c.delete(ctx, d, dep.UID(), policy); err != nil {
			return err
		}
	}
	if blocked {
		return nil // the dependents' deletes queue o again
	}
	return c.removeFinalizer(ctx, r, uid, meta.FinalizerDeleteDependents)
}

// collect deletes o when none of its owners exists any more (a dangling
// reference, or an owner deleted in the background) and, when some owner
// still exists, drops the references to those that are gone.
func (c *Collector) collect(ctx context.Context, r ref, o *meta.ObjectMeta) error {
	var solid, gone, waiting []string
	for _, or := range o.OwnerReferences {
		state, err := c.ownerState(ctx, or, o.Namespace)
		if err != nil {
			return err
		}
		switch state {
		case ownerSolid:
			solid = append(solid, or.UID)
		case ownerGone:
			gone = append(gone, or.UID)
		case ownerWaiting:
			waiting = append(waiting, or.UID)
		}
	}
	switch {
	case len(solid) > 0:
		if len(gone) == 0 {
			return nil
		}
		return c.update(ctx, r, func(m *meta.ObjectMeta) bool {
			n := len(m.OwnerReferences)
			m.OwnerReferences = slices.DeleteFunc(m.OwnerReferences, func(or meta.OwnerReference) bool { return slices.Contains(gone, or.UID) })
			return len(m.OwnerReferences) != n
		})
	case len(waiting) > 0:
		if o.DeletionTimestamp != nil {
			return nil
		}
		return c.deleteAt(ctx, r, o, meta.DeletePropagationForeground)
	case len(gone) > 0 && o.DeletionTimestamp == nil:
		// The object's own finalizer, if any, says how its dependents go.
		policy := meta.DeletePropagationBackground
		if slices.Contains(o.Finalizers, meta.FinalizerOrphanDependents) {
			policy = meta.DeletePropagationOrphan
		} else if slices.Contains(o.Finalizers, meta.FinalizerDeleteDependents) {
			policy = meta.DeletePropagationForeground
		}
		return c.deleteAt(ctx, r, o, policy)
	}
	return nil
}

// deleteAt deletes the object r names if it is still as m says: its owner
// references are what the decision was taken on. A change in between
// queues it again.
func (c *Collector) deleteAt(ctx context.Context, r ref, m *meta.ObjectMeta, policy meta.DeletionPropagation) error {
	return c.deleteWith(ctx, r, &meta.Preconditions{UID: &m.UID, ResourceVersion: &m.ResourceVersion}, policy)
}

type ownerState int

const (
	ownerUnknown ownerState = iota // a kind not collected: left alone
	ownerSolid
	ownerGone
	ownerWaiting // being deleted in the foreground
)

// ownerState reads the owner live (the cache may not have a new one yet).
func (c *Collector) ownerState(ctx context.Context, or meta.OwnerReference, ns string) (ownerState, error) {
	k, ok := c.kindOf(or)
	if !ok {
		return ownerUnknown, nil
	}
	if !k.resource().Info().NamespaceScoped {
		ns = ""
	}
	it, err := k.resource().Get(ctx, ns, or.Name, meta.GetOptions{})
	if meta.IsNotFound(err) {
		return ownerGone, nil
	}
	if err != nil {
		return ownerUnknown, fmt.Errorf("reading owner %s %s: %w", or.Kind, or.Name, err)
	}
	m, err := metadataOf(it)
	if err != nil {
		return ownerUnknown, fmt.Errorf("decoding owner %s %s: %w", or.Kind, or.Name, err)
	}
	switch {
	case m.UID != or.UID:
		return ownerGone, nil
	case m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, meta.FinalizerDeleteDependents):
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// delete deletes the object r names if it is still the one with uid.
func (c *Collector) delete(ctx context.Context, r ref, uid string, policy meta.DeletionPropagation) error {
	return c.deleteWith(ctx, r, &meta.Preconditions{UID: &uid}, policy)
}

func (c *Collector) deleteWith(ctx context.Context, r ref, pre *meta.Preconditions, policy meta.DeletionPropagation) error {
	_, _, err := r.k.resource().Delete(ctx, r.namespace, r.name, registry.DeleteOptions{
		Preconditions:     pre,
		PropagationPolicy: &policy,
		GarbageCollection: true,
	})
	if meta.IsNotFound(err) || meta.IsConflict(err) {
		return nil // gone or replaced: nothing of this object to collect
	}
	if err != nil {
		return fmt.Errorf("deleting %s/%s: %w", r.namespace, r.name, err)
	}
	return nil
}

// update changes the metadata of the object r names; edit reports whether
// it changed anything.
func (c *Collector) update(ctx context.Context, r ref, edit func(m *meta.ObjectMeta) bool) error {
	_, _, err := r.k.resource().Update(ctx, r.namespace, r.name, func(_ context.Context, cur meta.Object) (meta.Object, error) {
		if cur == nil {
			return nil, meta.NewNotFound(meta.GroupResource{Group: r.k.resource().Info().GroupVersion.Group, Resource: r.k.resource().Info().Resource}, r.name)
		}
		if !edit(cur.GetObjectMeta()) {
			return nil, errUnchanged
		}
		return cur, nil
	}, registry.UpdateOptions{})
	if errors.Is(err, errUnchanged) || meta.IsNotFound(err) {
		return nil
	}
	return err
}

var errUnchanged = errors.New("nothing to change")

// removeFinalizer removes finalizer from the object r names, if it is
// still the one with uid.
func (c *Collector) removeFinalizer(ctx context.Context, r ref, uid, finalizer string) error {
	return c.update(ctx, r, func(m *meta.ObjectMeta) bool {
		if m.UID != uid || !slices.Contains(m.Finalizers, finalizer) {
			return false
		}
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == finalizer })
		return true
	})
}
