package informer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Source is what an Informer reads: a registry.Store, or anything with its
// List and Watch.
type Source[T meta.Object] interface {
	List(ctx context.Context, ns string, opts meta.ListOptions) (*registry.ListResult[T], error)
	Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.Event[T], error)
}

var _ Source[*meta.PartialObjectMetadata] = (*registry.Store[*meta.PartialObjectMetadata])(nil)

// Handlers are told of changes, in the order storage made them, from the
// informer's goroutine, after the local store has them. A nil function is
// skipped. Handlers must not block for long: the next change waits.
type Handlers[T meta.Object] struct {
	// OnAdd is called for an object the informer had not seen.
	OnAdd func(obj T)
	// OnUpdate is called for a changed object (a new resourceVersion).
	OnUpdate func(old, obj T)
	// OnDelete is called for an object that is gone, with its last state.
	OnDelete func(obj T)
}

// IndexFunc returns the values under which an object is found in an
// index (ByIndex); none leaves it out of the index.
type IndexFunc[T meta.Object] func(obj T) []string

// Config says what an Informer watches and whom it tells.
type Config[T meta.Object] struct {
	// Source is read. Required.
	Source Source[T]
	// Namespace limits the informer to one namespace; "" is all.
	Namespace string
	// Handlers are told of changes.
	Handlers Handlers[T]
	// Indexers name the indexes ByIndex reads.
	Indexers map[string]IndexFunc[T]
	// Keep, when set, says which objects the local store keeps, for a
	// handler that needs only some of them at hand (the garbage
	// collector: objects with owners or being deleted), so that the
	// others cost no memory. An object it refuses is not stored and not
	// told to OnAdd or OnUpdate, unless the store had it: then it is
	// removed and told to OnUpdate. OnDelete is told of every deleted
	// object, stored or not. After a relist every stored object is told
	// to OnUpdate, at its new resourceVersion or not: an object the store
	// did not have may have gone meanwhile, unseen.
	Keep func(obj T) bool
	// PageSize is the limit of each page of a list; the default is 500.
	PageSize int64
	// MinBackoff and MaxBackoff bound the wait after a failure, which
	// doubles from the one to the other; the defaults are 100 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// Name names the informer in logs (the resource, usually).
	Name string
	// Logger receives retries; nil is slog.Default().
	Logger *slog.Logger
}

// Informer keeps a local copy of one resource and tells its handlers of
// changes; see the package documentation. Run it once.
type Informer[T meta.Object] struct {
	cfg Config[T]
	// keyed says T is Keyed: keys and resourceVersions are read from
	// InformerKey, not from GetObjectMeta.
	keyed bool

	mu      sync.RWMutex
	objects map[objectKey]T
	// indexes maps index name -> value -> the keys of the objects there.
	indexes map[string]map[string]keySet

	synced   chan struct{}
	syncOnce sync.Once
}

type objectKey struct{ namespace, name string }

// Keyed is implemented by an object type that names its key and
// resourceVersion without an ObjectMeta: a compact type that an informer
// over many objects keeps instead of their metadata (the garbage
// collector's nodes), whose GetObjectMeta may have to build one. An
// informer of a Keyed type reads InformerKey only.
type Keyed interface {
	InformerKey() (namespace, name, resourceVersion string)
}

// keyOf returns obj's key and resourceVersion.
func (i *Informer[T]) keyOf(obj T) (objectKey, string) {
	if i.keyed {
		ns, name, rv := any(obj).(Keyed).InformerKey()
		return objectKey{ns, name}, rv
	}
	m := obj.GetObjectMeta()
	return objectKey{m.Namespace, m.Name}, m.ResourceVersion
}

// New returns an Informer of cfg; it does nothing until Run.
func New[T meta.Object](cfg Config[T]) *Informer[T] {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 500
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(5*time.Second, cfg.MinBackoff)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	i := &Informer[T]{
		cfg:     cfg,
		objects: map[objectKey]T{},
		indexes: map[string]map[string]keySet{},
		synced:  make(chan struct{}),
	}
	for name := range cfg.Indexers {
		i.indexes[name] = map[string]keySet{}
	}
	_, i.keyed = any(*new(T)).(Keyed)
	return i
}

// Synced is closed once the first list is in the local store and its
// objects have been handed to OnAdd.
func (i *Informer[T]) Synced() <-chan struct{} { return i.synced }

// HasSynced reports whether Synced is closed.
func (i *Informer[T]) HasSynced() bool {
	select {
	case <-i.synced:
		return true
	default:
		return false
	}
}

// WaitForSync returns nil once the informer has synced, or ctx's error.
func (i *Informer[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-i.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("informer %s: waiting for its first list: %w", i.cfg.Name, ctx.Err())
	}
}

// Get returns the object namespace/name ("" namespace for cluster-scoped
// ones) as the informer last saw it. Objects are shared: do not modify.
func (i *Informer[T]) Get(namespace, name string) (T, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	obj, ok := i.objects[objectKey{namespace, name}]
	return obj, ok
}

// List returns every object, sorted by namespace and name.
func (i *Informer[T]) List() []T {
	i.mu.RLock()
	keys := make([]objectKey, 0, len(i.objects))
	for k := range i.objects {
		keys = append(keys, k)
	}
	i.mu.RUnlock()
	return i.sorted(keys)
}

// ByIndex returns the objects the index (a name of Config.Indexers) files
// under value, sorted by namespace and name; an unknown index has none.
func (i *Informer[T]) ByIndex(index, value string) []T {
	i.mu.RLock()
	keys := i.indexes[index][value].appendTo(nil)
	i.mu.RUnlock()
	return i.sorted(keys)
}

func (i *Informer[T]) sorted(keys []objectKey) []T {
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].namespace != keys[b].namespace {
			return keys[a].namespace < keys[b].namespace
		}
		return keys[a].name < keys[b].name
	})
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		if obj, ok := i.objects[k]; ok {
			out = append(out, obj)
		}
	}
	return out
}

// Run lists and watches until ctx ends; it returns then, after its last
// handler call. Call it once, in a goroutine its caller owns.
func (i *Informer[T]) Run(ctx context.Context) {
	backoff := i.cfg.MinBackoff
	wait := func() bool {
		t := time.NewTimer(backoff)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			backoff = min(2*backoff, i.cfg.MaxBackoff)
			return true
		}
	}
	rv := "" // "" lists; otherwise the revision to watch from
	for ctx.Err() == nil {
		if rv == "" {
			listed, err := i.list(ctx)
			if err != nil {
				i.warn(ctx, "listing failed; retrying", err)
				if !wait() {
					return
				}
				continue
			}
			rv = listed
			i.syncOnce.Do(func() { close(i.synced) })
			backoff = i.cfg.MinBackoff
		}
		next, progressed, err := i.watch(ctx, rv)
		if ctx.Err() != nil {
			return
		}
		rv = next
		switch {
		case meta.IsResourceExpired(err):
			// The revision is compacted away: only a new list can say what
			// changed meanwhile.
			i.cfg.Logger.Info("informer: watch revision is gone; listing again", "informer", i.cfg.Name, "revision", rv, "err", err)
			rv = ""
			continue
		case err != nil:
			i.warn(ctx, "watch failed; watching again", err)
		}
		if progressed {
			backoff = i.cfg.MinBackoff
		}
		// Do not spin on a watch that keeps ending at once.
		if !wait() {
			return
		}
	}
}

func (i *Informer[T]) warn(ctx context.Context, msg string, err error) {
	if ctx.Err() == nil {
		i.cfg.Logger.Warn("informer: "+msg, "informer", i.cfg.Name, "err", err)
	}
}

// list reads every object, page by page at one revision, makes the local
// store equal to them, and returns the list's revision.
func (i *Informer[T]) list(ctx context.Context) (string, error) {
	var items []T
	opts := meta.ListOptions{Limit: i.cfg.PageSize}
	for {
		res, err := i.cfg.Source.List(ctx, i.cfg.Namespace, opts)
		if err != nil {
			return "", fmt.Errorf("listing %s: %w", i.cfg.Name, err)
		}
		for _, e := range res.Items {
			items = append(items, e.Object)
		}
		if res.Continue == "" {
			i.replace(items)
			return res.ResourceVersion, nil
		}
		opts.Continue = res.Continue
	}
}

// replace makes the local store equal to items, telling the handlers what
// differs: new objects, objects at another resourceVersion, and objects
// no longer there.
func (i *Informer[T]) replace(items []T) {
	seen := make(map[objectKey]struct{}, len(items))
	var same []T
	for _, obj := range items {
		k, _ := i.keyOf(obj)
		seen[k] = struct{}{}
		if !i.put(obj) && i.cfg.Keep != nil {
			same = append(same, obj)
		}
	}
	i.mu.RLock()
	var gone []T
	for k, obj := range i.objects {
		if _, ok := seen[k]; !ok {
			gone = append(gone, obj)
		}
	}
	i.mu.RUnlock()
	for _, obj := range gone {
		i.remove(obj)
	}
	if h := i.cfg.Handlers.OnUpdate; h != nil {
		for _, obj := range same {
			h(obj, obj)
		}
	}
}

// watch watches from rv and applies each event. It returns the last
// revision seen, whether any event came, and the error that ended the
// watch (nil when it simply ended).
func (i *Informer[T]) watch(ctx context.Context, rv string) (string, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next, err := i.events(ctx, meta.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		return rv, false, fmt.Errorf("watching %s from %s: %w", i.cfg.Name, rv, err)
	}
	progressed := false
	for ev := range next {
		switch ev.Type {
		case meta.Added, meta.Modified:
			i.put(ev.Object)
		case meta.Deleted:
			i.remove(ev.Object)
		case meta.Bookmark:
		case meta.Error:
			if ev.Err == nil {
				return rv, progressed, errors.New("watch error event without an error")
			}
			return rv, progressed, ev.Err
		default:
			continue
		}
		progressed = true
		if _, v := i.keyOf(ev.Object); v != "" {
			rv = v
		}
	}
	return rv, progressed, nil
}

// events watches the source and returns its events, to be read once, in
// the informer's goroutine where the source allows it: a registry.Store's
// events (Store.WatchSeq) and an ItemSource's items, converted as they are
// read, come without a goroutine of the watch's own, as registry's watches
// and registry.ConvertWatch would use (two parked goroutines per resource
// followed: the garbage collector follows every resource).
func (i *Informer[T]) events(ctx context.Context, opts meta.ListOptions) (iter.Seq[registry.Event[T]], error) {
	switch src := i.cfg.Source.(type) {
	case *registry.Store[T]:
		// The Store itself, not a type embedding it: one that does may
		// well mean its own Watch to be read.
		return src.WatchSeq(ctx, i.cfg.Namespace, opts)
	case convertingSource[T]:
		items, err := src.watchItems(ctx, i.cfg.Namespace, opts)
		if err != nil {
			return nil, err
		}
		return func(yield func(registry.Event[T]) bool) {
			for it := range items {
				ev, last := src.convertEvent(it)
				if !yield(ev) || last {
					return
				}
			}
		}, nil
	}
	events, err := i.cfg.Source.Watch(ctx, i.cfg.Namespace, opts)
	if err != nil {
		return nil, err
	}
	return func(yield func(registry.Event[T]) bool) {
		for ev := range events {
			if !yield(ev) {
				return
			}
		}
	}, nil
}

// put stores obj and tells OnAdd or OnUpdate; an object at the
// resourceVersion the store has already is nothing new, for which it
// returns false.
func (i *Informer[T]) put(obj T) bool {
	k, rv := i.keyOf(obj)
	keep := i.cfg.Keep == nil || i.cfg.Keep(obj)
	i.mu.Lock()
	old, had := i.objects[k]
	if had {
		if _, oldRV := i.keyOf(old); oldRV == rv {
			i.mu.Unlock()
			return false
		}
		i.unindexLocked(k, old)
	}
	switch {
	case keep:
		i.objects[k] = obj
		i.indexLocked(k, obj)
	case had:
		delete(i.objects, k)
	default:
		i.mu.Unlock()
		return true
	}
	i.mu.Unlock()
	switch h := i.cfg.Handlers; {
	case !had && h.OnAdd != nil:
		h.OnAdd(obj)
	case had && h.OnUpdate != nil:
		h.OnUpdate(old, obj)
	}
	return true
}

// remove forgets obj and tells OnDelete, with the last state the store
// had when it had one.
func (i *Informer[T]) remove(obj T) {
	k, _ := i.keyOf(obj)
	i.mu.Lock()
	old, had := i.objects[k]
	if had {
		i.unindexLocked(k, old)
		delete(i.objects, k)
	}
	i.mu.Unlock()
	if (had || i.cfg.Keep != nil) && i.cfg.Handlers.OnDelete != nil {
		i.cfg.Handlers.OnDelete(obj)
	}
}

func (i *Informer[T]) indexLocked(k objectKey, obj T) {
	for name, f := range i.cfg.Indexers {
		idx := i.indexes[name]
		for _, v := range f(obj) {
			idx[v] = idx[v].add(k)
		}
	}
}

func (i *Informer[T]) unindexLocked(k objectKey, obj T) {
	for name, f := range i.cfg.Indexers {
		idx := i.indexes[name]
		for _, v := range f(obj) {
			if set := idx[v].remove(k); set.len() > 0 {
				idx[v] = set
			} else {
				delete(idx, v)
			}
		}
	}
}

// keySet holds the keys of the objects one index value files. Most values
// file one object or a few (a uid; the children of one owner are often
// few), so up to smallKeySet keys are held in a slice and a map is made only
// beyond: a map per value costs ~300 bytes, ten times a one-key slice, and
// an index by a unique value (a uid) files every object of the informer.
type keySet struct {
	few  []objectKey
	many map[objectKey]struct{} // non-nil once the set outgrew few
}

// smallKeySet is the most keys a keySet holds in its slice, searched
// linearly.
const smallKeySet = 8

func (s keySet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	return len(s.few)
}

func (s keySet) add(k objectKey) keySet {
	if s.many != nil {
		s.many[k] = struct{}{}
		return s
	}
	if slices.Contains(s.few, k) {
		return s
	}
	if len(s.few) < smallKeySet {
		return keySet{few: append(s.few, k)}
	}
	many := make(map[objectKey]struct{}, 2*smallKeySet)
	for _, f := range s.few {
		many[f] = struct{}{}
	}
	many[k] = struct{}{}
	return keySet{many: many}
}

func (s keySet) remove(k objectKey) keySet {
	if s.many != nil {
		delete(s.many, k)
		return s
	}
	if j := slices.Index(s.few, k); j >= 0 {
		// In place: ByIndex copies keys out under the lock, so no one
		// else holds the array.
		s.few = slices.Delete(s.few, j, j+1)
	}
	return s
}

// appendTo appends the set's keys to dst.
func (s keySet) appendTo(dst []objectKey) []objectKey {
	if s.many == nil {
		return append(dst, s.few...)
	}
	for k := range s.many {
		dst = append(dst, k)
	}
	return dst
}
