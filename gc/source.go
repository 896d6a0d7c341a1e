package gc

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// metadataSource reads a served resource as object metadata, for an
// informer.
type metadataSource struct{ k *kind }

func partial(it registry.Item) (*meta.PartialObjectMetadata, error) {
	obj, err := it.Object()
	if err != nil {
		return nil, fmt.Errorf("decoding an item: %w", err)
	}
	return &meta.PartialObjectMetadata{ObjectMeta: *obj.GetObjectMeta()}, nil
}

func (s metadataSource) List(ctx context.Context, ns string, opts meta.ListOptions) (*registry.ListResult[*meta.PartialObjectMetadata], error) {
	l, err := s.k.resource().List(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := &registry.ListResult[*meta.PartialObjectMetadata]{ResourceVersion: l.ResourceVersion, Continue: l.Continue, RemainingItemCount: l.RemainingItemCount}
	for _, it := range l.Items {
		p, err := partial(it)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, registry.Entry[*meta.PartialObjectMetadata]{Object: p})
	}
	return out, nil
}

// Watch converts the resource's events; its goroutine ends when the
// resource's channel closes (ctx ending closes it) or ctx ends.
func (s metadataSource) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.Event[*meta.PartialObjectMetadata], error) {
	in, err := s.k.resource().Watch(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan registry.Event[*meta.PartialObjectMetadata])
	go func() {
		defer close(out)
		for e := range in {
			ev := registry.Event[*meta.PartialObjectMetadata]{Type: e.Type, Err: e.Err}
			if e.Err == nil {
				p, err := partial(e.Item)
				if err != nil {
					ev = registry.Event[*meta.PartialObjectMetadata]{Type: meta.Error, Err: meta.NewInternalError(err)}
				} else {
					ev.Object = p
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
