package etcd3

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/tracing"
)

// maxFetch caps the range size of one request while a filtered list looks
// for enough matching items, as kube-apiserver does.
const maxFetch = 10000

// List implements storage.Interface.
func (s *store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	ctx, span := tracing.Start(ctx, "List etcd3", attribute.String("key", prefix))
	defer span.End()
	if err := s.checkOpen(); err != nil {
		return storage.ListResult{}, err
	}
	prefix = storage.ListPrefix(prefix)
	plan, err := storage.PlanList(prefix, opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	if plan.NotOlderThan > 0 {
		if err := s.waitForRevision(ctx, plan.NotOlderThan); err != nil {
			return storage.ListResult{}, err
		}
	}
	// etcd's ranges are linearizable: the latest state is a consistent one.
	start, rev := plan.Start, plan.Revision

	end := clientv3.GetPrefixRangeEnd(s.full(prefix))
	key := s.full(start)
	filtered := !opts.Predicate.Empty()
	limit := opts.Limit
	fetch := limit
	var res storage.ListResult
	if limit > 0 {
		res.Items = make([]storage.KeyValue, 0, min(limit, 1024))
	}
	var (
		more      bool
		remaining int64
	)
	for {
		ropts := []clientv3.OpOption{clientv3.WithRange(end)}
		if fetch > 0 {
			ropts = append(ropts, clientv3.WithLimit(fetch))
		}
		if rev > 0 {
			ropts = append(ropts, clientv3.WithRev(rev))
		}
		var resp *clientv3.GetResponse
		err := s.call(ctx, false, func(ctx context.Context, kv clientv3.KV, _ bool) (err error) {
			resp, err = kv.Get(ctx, key, ropts...)
			return err
		})
		if err != nil {
			err = s.mapErr(ctx, "list", prefix, rev, err)
			if plan.Continued && storage.CodeOf(err) == storage.CodeExpired {
				err = storage.NewContinueExpired(plan, prefix, err)
			}
			return storage.ListResult{}, err
		}
		if rev == 0 {
			// Later pages and later requests of this list read at the
			// revision of the first one.
			rev = resp.Header.Revision
		}
		consumed := 0
		for _, e := range resp.Kvs {
			if limit > 0 && int64(len(res.Items)) == limit {
				more = true
				break
			}
			consumed++
			kv := storage.KeyValue{Key: s.short(e.Key), Value: e.Value, Revision: e.ModRevision}
			if filtered {
				match, err := opts.Predicate.Matches(kv.Value, nil)
				if err != nil {
					return storage.ListResult{}, fmt.Errorf("filtering %q: %w", kv.Key, err)
				}
				if !match {
					continue
				}
			}
			res.Items = append(res.Items, kv)
		}
		if more || !resp.More {
			remaining = resp.Count - int64(consumed)
			break
		}
		if limit > 0 && int64(len(res.Items)) == limit {
			more = true
			remaining = resp.Count - int64(consumed)
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		if filtered {
			fetch = min(2*fetch, maxFetch)
		}
	}
	res.Revision = rev
	if !more {
		return res, nil
	}
	token, err := storage.EncodeContinue(res.Items[len(res.Items)-1].Key, prefix, rev)
	if err != nil {
		return storage.ListResult{}, fmt.Errorf("encoding continue token: %w", err)
	}
	res.Continue = token
	if !filtered {
		res.RemainingItemCount = &remaining
	}
	return res, nil
}
