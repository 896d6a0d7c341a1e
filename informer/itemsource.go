package informer

import (
	"context"
	"iter"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// ItemSource reads a served resource's items as T, for an informer over
// a resource whose items are not Ts (any resource of a chain, a custom
// resource, an aggregated one): convert makes each item's T. resource is
// asked at each List and Watch, so that a resource replaced while the
// informer runs (a CRD's new generation) is read from then on.
func ItemSource[T meta.Object](resource func() registry.Resource, convert func(registry.Item) (T, error)) Source[T] {
	return itemSource[T]{resource, convert}
}

type itemSource[T meta.Object] struct {
	resource func() registry.Resource
	convert  func(registry.Item) (T, error)
}

func (s itemSource[T]) List(ctx context.Context, ns string, opts meta.ListOptions) (*registry.ListResult[T], error) {
	l, err := s.resource().List(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := &registry.ListResult[T]{ResourceVersion: l.ResourceVersion, Continue: l.Continue, RemainingItemCount: l.RemainingItemCount}
	for _, it := range l.Items {
		obj, err := s.convert(it)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, registry.Entry[T]{Object: obj})
	}
	return out, nil
}

// Watch converts the resource's events (registry.ConvertWatch). An item
// that cannot be converted ends the watch with an internal error. An
// Informer does not call it: it reads watchItems and converts in its own
// goroutine, with no goroutine of the conversion's parked per watch.
func (s itemSource[T]) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.Event[T], error) {
	return registry.ConvertWatch(ctx, func(ctx context.Context) (<-chan registry.WatchEvent, error) {
		return s.resource().Watch(ctx, ns, opts)
	}, func(_ context.Context, e registry.WatchEvent) (registry.Event[T], bool) {
		return s.convertEvent(e)
	})
}

// watchItems watches the resource's items, to be ranged over once: without
// a goroutine of the watch's own when the resource is a
// registry.SeqWatcher. Otherwise, when the range ends, the watch is
// cancelled and read to its end (a Resource closes its watch's channel once
// its context is done), so that its sender is never left blocked.
func (s itemSource[T]) watchItems(ctx context.Context, ns string, opts meta.ListOptions) (iter.Seq[registry.WatchEvent], error) {
	res := s.resource()
	if sw, ok := res.(registry.SeqWatcher); ok {
		return sw.WatchSeq(ctx, ns, opts)
	}
	ctx, cancel := context.WithCancel(ctx)
	items, err := res.Watch(ctx, ns, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	return func(yield func(registry.WatchEvent) bool) {
		defer func() {
			cancel()
			for range items {
			}
		}()
		for it := range items {
			if !yield(it) {
				return
			}
		}
	}, nil
}

func (s itemSource[T]) convertEvent(e registry.WatchEvent) (ev registry.Event[T], last bool) {
	if e.Err != nil {
		return registry.Event[T]{Type: e.Type, Err: e.Err}, e.Type == meta.Error
	}
	obj, err := s.convert(e.Item)
	if err != nil {
		return registry.Event[T]{Type: meta.Error, Err: meta.NewInternalError(err)}, true
	}
	return registry.Event[T]{Type: e.Type, Object: obj}, e.Type == meta.Error
}

// convertingSource is a Source whose events are another resource's items
// converted one by one (ItemSource). An Informer reads the items and
// converts them in its own goroutine: a goroutine converting each watch's
// events would be one more parked goroutine per resource followed, and the
// garbage collector follows every resource.
type convertingSource[T meta.Object] interface {
	watchItems(ctx context.Context, ns string, opts meta.ListOptions) (iter.Seq[registry.WatchEvent], error)
	convertEvent(e registry.WatchEvent) (ev registry.Event[T], last bool)
}
