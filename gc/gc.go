package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

const (
	byUID   = "uid"
	byOwner = "owner"
)

// Config says what a Collector collects.
type Config struct {
	// Resources are the resources collected, one served version of each
	// (others of the same group and kind are skipped). Owners of kinds not
	// here are never taken for gone.
	Resources []registry.Resource
	// RetryInterval is how long a failed object waits before it is tried
	// again; the default is one second.
	RetryInterval time.Duration
	// Logger receives failures; nil is slog.Default().
	Logger *slog.Logger
}

// Collector is a garbage collector; see the package documentation. Run it
// once.
type Collector struct {
	kinds   []*kind
	byKind  map[meta.GroupKind]*kind
	retry   time.Duration
	logger  *slog.Logger
	mu      sync.Mutex
	dirty   map[ref]bool
	wake    chan struct{}
	pending map[ref]bool // failed, tried again after retry
}

// kind is one collected resource and its informer.
type kind struct {
	res registry.Resource
	inf *informer.Informer[*meta.PartialObjectMetadata]
}

// ref names one object of a collected kind.
type ref struct {
	k         *kind
	namespace string
	name      string
}

// New returns a Collector of cfg's resources.
func New(cfg Config) *Collector {
	c := &Collector{
		byKind:  map[meta.GroupKind]*kind{},
		retry:   cfg.RetryInterval,
		logger:  cfg.Logger,
		dirty:   map[ref]bool{},
		pending: map[ref]bool{},
		wake:    make(chan struct{}, 1),
	}
	if c.retry <= 0 {
		c.retry = time.Second
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	for _, res := range cfg.Resources {
		info := res.Info()
		gk := meta.GroupKind{Group: info.GroupVersion.Group, Kind: info.Kind}
		if c.byKind[gk] != nil || !info.Serves("list") || !info.Serves("watch") || !info.Serves("delete") {
			continue
		}
		k := &kind{res: res}
		k.inf = informer.New(informer.Config[*meta.PartialObjectMetadata]{
			Source: metadataSource{res: res},
			Name:   info.Resource + "." + gk.Group,
			Logger: c.logger,
			Indexers: map[string]informer.IndexFunc[*meta.PartialObjectMetadata]{
				byUID: func(o *meta.PartialObjectMetadata) []string { return []string{o.UID} },
				byOwner: func(o *meta.PartialObjectMetadata) []string {
					out := make([]string, 0, len(o.OwnerReferences))
					for _, r := range o.OwnerReferences {
						out = append(out, r.UID)
					}
					return out
				},
			},
			Handlers: informer.Handlers[*meta.PartialObjectMetadata]{
				OnAdd:    func(o *meta.PartialObjectMetadata) { c.changed(k, o, false) },
				OnUpdate: func(_, o *meta.PartialObjectMetadata) { c.changed(k, o, false) },
				OnDelete: func(o *meta.PartialObjectMetadata) { c.changed(k, o, true) },
			},
		})
		c.kinds = append(c.kinds, k)
		c.byKind[gk] = k
	}
	return c
}

// changed queues what a change of o may unblock: o itself, its dependents
// (their owner may be gone or going) and its owners (one deleted in the
// foreground may be waiting for o).
func (c *Collector) changed(k *kind, o *meta.PartialObjectMetadata, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !deleted {
		c.dirty[ref{k, o.Namespace, o.Name}] = true
	}
	if deleted || o.DeletionTimestamp != nil {
		for _, d := range c.dependents(o.UID) {
			c.dirty[d] = true
		}
	}
	for _, or := range o.OwnerReferences {
		if owner, ok := c.cached(or, o.Namespace); ok {
			c.dirty[owner] = true
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// dependents are the cached objects with an owner reference to uid.
func (c *Collector) dependents(uid string) []ref {
	var out []ref
	for _, k := range c.kinds {
		for _, o := range k.inf.ByIndex(byOwner, uid) {
			out = append(out, ref{k, o.Namespace, o.Name})
		}
	}
	return out
}

// cached finds the owner of a reference from an object in namespace ns
// in the informers' caches.
func (c *Collector) cached(or meta.OwnerReference, ns string) (ref, bool) {
	k, ok := c.kindOf(or)
	if !ok {
		return ref{}, false
	}
	for _, o := range k.inf.ByIndex(byUID, or.UID) {
		return ref{k, o.Namespace, o.Name}, true
	}
	return ref{}, false
}

func (c *Collector) kindOf(or meta.OwnerReference) (*kind, bool) {
	group, _, found := strings.Cut(or.APIVersion, "/")
	if !found {
		group = "" // "v1": the core group
	}
	k, ok := c.byKind[meta.GroupKind{Group: group, Kind: or.Kind}]
	return k, ok
}

// Run runs the informers and processes changes until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, k := range c.kinds {
		wg.Go(func() { k.inf.Run(ctx) })
	}
	for _, k := range c.kinds {
		if err := k.inf.WaitForSync(ctx); err != nil {
			return
		}
	}
	retry := time.NewTicker(c.retry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-retry.C:
			c.mu.Lock()
			for r := range c.pending {
				c.dirty[r] = true
			}
			clear(c.pending)
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
				c.logger.Warn("garbage collector: will retry", "resource", r.k.res.Info().Resource, "namespace", r.namespace, "name", r.name, "err", err)
				c.mu.Lock()
				c.pending[r] = true
				c.mu.Unlock()
			}
		}
	}
}

func (c *Collector) next() (ref, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for r := range c.dirty {
		delete(c.dirty, r)
		return r, true
	}
	return ref{}, false
}

// process brings one object forward: an owner being deleted with the
// orphan or foregroundDeletion finalizer, and a dependent whose owners are
// gone.
func (c *Collector) process(ctx context.Context, r ref) error {
	o, ok := r.k.inf.Get(r.namespace, r.name)
	if !ok {
		return nil
	}
	if o.DeletionTimestamp != nil {
		switch {
		case slices.Contains(o.Finalizers, meta.FinalizerOrphanDependents):
			return c.orphan(ctx, r, o)
		case slices.Contains(o.Finalizers, meta.FinalizerDeleteDependents):
			return c.foreground(ctx, r, o)
		}
	}
	if len(o.OwnerReferences) == 0 {
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
	it, err := r.k.res.Get(ctx, r.namespace, r.name, meta.GetOptions{})
	if meta.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", r.namespace, r.name, err)
	}
	obj, err := it.Object()
	if err != nil {
		return nil, fmt.Errorf("decoding %s/%s: %w", r.namespace, r.name, err)
	}
	return obj.GetObjectMeta(), nil
}

// orphan removes the references to o from its dependents, then o's orphan
// finalizer.
func (c *Collector) orphan(ctx context.Context, r ref, o *meta.PartialObjectMetadata) error {
	for _, d := range c.dependents(o.UID) {
		err := c.update(ctx, d, func(m *meta.ObjectMeta) bool {
			n := len(m.OwnerReferences)
			m.OwnerReferences = slices.DeleteFunc(m.OwnerReferences, func(or meta.OwnerReference) bool { return or.UID == o.UID })
			return len(m.OwnerReferences) != n
		})
		if err != nil {
			return fmt.Errorf("orphaning %s/%s: %w", d.namespace, d.name, err)
		}
	}
	return c.removeFinalizer(ctx, r, o.UID, meta.FinalizerOrphanDependents)
}

// foreground deletes o's dependents (in the foreground those that block
// it) and removes o's foregroundDeletion finalizer once none that blocks
// it is left, as kube's collector waits only for blocking dependents.
func (c *Collector) foreground(ctx context.Context, r ref, o *meta.PartialObjectMetadata) error {
	blocked := false
	for _, d := range c.dependents(o.UID) {
		dep, ok := d.k.inf.Get(d.namespace, d.name)
		if !ok {
			continue
		}
		blocks := false
		for _, or := range dep.OwnerReferences {
			if or.UID == o.UID && or.BlockOwnerDeletion != nil && *or.BlockOwnerDeletion {
				blocks = true
			}
		}
		blocked = blocked || blocks
		if dep.DeletionTimestamp != nil {
			continue
		}
		policy := meta.DeletePropagationBackground
		if blocks {
			policy = meta.DeletePropagationForeground
		}
		if err := c.delete(ctx, d, dep.UID, policy); err != nil {
			return err
		}
	}
	if blocked {
		return nil // the dependents' deletes queue o again
	}
	return c.removeFinalizer(ctx, r, o.UID, meta.FinalizerDeleteDependents)
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
	if !k.res.Info().NamespaceScoped {
		ns = ""
	}
	it, err := k.res.Get(ctx, ns, or.Name, meta.GetOptions{})
	if meta.IsNotFound(err) {
		return ownerGone, nil
	}
	if err != nil {
		return ownerUnknown, fmt.Errorf("reading owner %s %s: %w", or.Kind, or.Name, err)
	}
	obj, err := it.Object()
	if err != nil {
		return ownerUnknown, fmt.Errorf("decoding owner %s %s: %w", or.Kind, or.Name, err)
	}
	m := obj.GetObjectMeta()
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
	_, _, err := r.k.res.Delete(ctx, r.namespace, r.name, registry.DeleteOptions{
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
	_, _, err := r.k.res.Update(ctx, r.namespace, r.name, func(_ context.Context, cur meta.Object) (meta.Object, error) {
		if cur == nil {
			return nil, meta.NewNotFound(meta.GroupResource{Group: r.k.res.Info().GroupVersion.Group, Resource: r.k.res.Info().Resource}, r.name)
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
