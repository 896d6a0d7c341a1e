package registry

import (
	"context"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// Counter is implemented by Resources that can count their stored objects
// cheaply; flow control estimates the cost of lists from the counts.
type Counter interface {
	Count(ctx context.Context) (int64, error)
}

// Count returns the number of objects stored, in every namespace, from a
// one-item list at any revision: a watch cache answers from memory, etcd
// with its range count, and no object is decoded.
func (s *Store[T]) Count(ctx context.Context) (int64, error) {
	res, err := s.opts.Storage.List(ctx, s.prefix(""), storage.ListOptions{AnyRevision: true, Limit: 1})
	if err != nil {
		return 0, s.storageError(err, "")
	}
	n := int64(len(res.Items))
	if res.RemainingItemCount != nil {
		n += *res.RemainingItemCount
	}
	return n, nil
}

// Count implements Counter.
func (r *served[S, V]) Count(ctx context.Context) (int64, error) { return r.st.Count(ctx) }

// CountEach counts the objects of every resource among resources that is
// a Counter, once per group and resource (the versions of a resource are
// the same objects), and hands each count, or the error counting gave, to
// f. count runs each count: it may bound it in time.
func CountEach(resources []Resource, count func(Counter) (int64, error), f func(gr meta.GroupResource, n int64, err error)) {
	seen := map[meta.GroupResource]bool{}
	for _, r := range resources {
		c, ok := r.(Counter)
		if !ok {
			continue
		}
		info := r.Info()
		gr := meta.GroupResource{Group: info.GroupVersion.Group, Resource: info.Resource}
		if seen[gr] {
			continue
		}
		seen[gr] = true
		n, err := count(c)
		f(gr, n, err)
	}
}
