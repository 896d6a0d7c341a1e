package etcd3

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/storage"
)

// maxFetch caps the range size of one request while a filtered list looks
// for enough matching items, as kube-apiserver does.
const maxFetch = 10000

// listPrefix makes prefix end in "/", so that "/a" never lists "/ab/x".
// List implements storage.Interface.
func (s *store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	if err := s.checkOpen(); err != nil {
		return storage.ListResult{}, err
	}
	prefix = storage.ListPrefix(prefix)
	start := prefix
	var rev int64 // 0: the latest
	fromContinue := false
	switch {
	case opts.Continue != "":
		if opts.Revision != 0 {
			return storage.ListResult{}, storage.NewInvalidObject("specifying resource version is not allowed when using continue")
		}
		var err error
		if start, rev, err = storage.DecodeContinue(opts.Continue, prefix); err != nil {
			return storage.ListResult{}, err
		}
		fromContinue = true
	case opts.AnyRevision || opts.Revision == 0:
	case opts.Match == storage.MatchExact || (opts.Match == storage.MatchDefault && opts.Limit > 0):
		rev = opts.Revision
	case opts.Match == storage.MatchNotOlderThan || opts.Match == storage.MatchDefault:
		if err := s.waitForRevision(ctx, opts.Revision); err != nil {
			return storage.ListResult{}, err
		}
	default:
		return storage.ListResult{}, storage.NewInvalidObject("unknown resourceVersionMatch %q", opts.Match)
	}

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
		resp, err := s.client.Get(ctx, key, ropts...)
		if err != nil {
			err = s.mapErr(ctx, "list", prefix, rev, err)
			if fromContinue && storage.CodeOf(err) == storage.CodeExpired {
				err = &storage.Error{Code: storage.CodeExpired, Revision: rev, Err: err,
					Message: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."}
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
