package informer

import (
	"context"

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

// Watch converts the resource's events; its goroutine ends when the
// resource's channel closes (ctx ending closes it) or ctx ends. An item
// that cannot be converted ends the watch with an internal error.
func (s itemSource[T]) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.Event[T], error) {
	in, err := s.resource().Watch(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan registry.Event[T])
	go func() {
		defer close(out)
		for e := range in {
			ev := registry.Event[T]{Type: e.Type, Err: e.Err}
			if e.Err == nil {
				obj, err := s.convert(e.Item)
				if err != nil {
					ev = registry.Event[T]{Type: meta.Error, Err: meta.NewInternalError(err)}
				} else {
					ev.Object = obj
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Type == meta.Error {
				return
			}
		}
	}()
	return out, nil
}
