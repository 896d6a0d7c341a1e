package gc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// metadataSource reads a served resource as object metadata, for an
// informer.
type metadataSource struct{ k *kind }

// collected is the part of an object's metadata the collector keeps: its
// key, its uid and resourceVersion, and what collecting it reads. Labels,
// annotations and managedFields (most of an object's metadata) are not
// kept, and the object is never decoded: its JSON (memoized by the watch
// cache, which LIST and GET share) is read for these fields alone.
type collected struct {
	Metadata struct {
		Name              string                `json:"name"`
		Namespace         string                `json:"namespace"`
		UID               string                `json:"uid"`
		ResourceVersion   string                `json:"resourceVersion"`
		DeletionTimestamp *meta.Time            `json:"deletionTimestamp"`
		OwnerReferences   []meta.OwnerReference `json:"ownerReferences"`
		Finalizers        []string              `json:"finalizers"`
	} `json:"metadata"`
}

func partial(it registry.Item) (*meta.PartialObjectMetadata, error) {
	b, err := it.JSON()
	if err != nil {
		return nil, fmt.Errorf("encoding an item: %w", err)
	}
	var c collected
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("reading an item's metadata: %w", err)
	}
	m := c.Metadata
	return &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
	}}, nil
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
