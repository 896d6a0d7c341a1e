package registry

import (
	"context"

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
