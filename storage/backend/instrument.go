package backend

import (
	"context"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/storage"
)

// instrumented times every request to the backend for one resource
// (etcd_request_duration_seconds, etcd_requests_total,
// etcd_request_errors_total, apiserver_storage_list_*). It sits under the
// resource's watch cache, so it sees what reaches the backend: writes,
// the reads the cache passes on, and the cache's own list.
type instrumented struct {
	storage.Interface
	rec metrics.StorageRequests
}

// instrumentedOrdered is instrumented over a backend that knows whether
// its progress reports are ordered, which the watch cache asks.
type instrumentedOrdered struct {
	instrumented
	po storage.ProgressOrderer
}

func (i instrumentedOrdered) ProgressOrdered() bool { return i.po.ProgressOrdered() }

// instrument returns st recording its requests for resource under m; st
// as it is without metrics.
func instrument(st storage.Interface, m *metrics.Registry, resource meta.GroupResource) storage.Interface {
	if m == nil {
		return st
	}
	i := instrumented{Interface: st, rec: m.StorageRequestsOf(resource.Group, resource.Resource)}
	if po, ok := st.(storage.ProgressOrderer); ok {
		return instrumentedOrdered{instrumented: i, po: po}
	}
	return i
}

func (i instrumented) Create(ctx context.Context, key string, value []byte) (int64, error) {
	start := time.Now()
	rev, err := i.Interface.Create(ctx, key, value)
	i.rec.Observe(metrics.OpCreate, start, failure(err))
	return rev, err
}

func (i instrumented) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	start := time.Now()
	kv, err := i.Interface.Get(ctx, key, opts)
	i.rec.Observe(metrics.OpGet, start, failure(err))
	return kv, err
}

func (i instrumented) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.KeyValue, error) {
	start := time.Now()
	kv, err := i.Interface.GuaranteedUpdate(ctx, key, opts, tryUpdate)
	i.rec.Observe(metrics.OpUpdate, start, failure(err))
	return kv, err
}

func (i instrumented) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.KeyValue, error) {
	start := time.Now()
	kv, err := i.Interface.Delete(ctx, key, opts)
	i.rec.Observe(metrics.OpDelete, start, failure(err))
	return kv, err
}

func (i instrumented) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	start := time.Now()
	res, err := i.Interface.List(ctx, prefix, opts)
	i.rec.Observe(metrics.OpList, start, failure(err))
	if err == nil {
		i.rec.ObserveList(len(res.Items))
	}
	return res, err
}

// failure is err when the request failed, nil when the backend answered:
// a missing object, one that exists already, a stale revision or an
// object refused before it was sent are answers, as they are in
// kube-apiserver, where etcd itself reported no error.
func failure(err error) error {
	switch storage.CodeOf(err) {
	case storage.CodeNotFound, storage.CodeAlreadyExists, storage.CodeConflict,
		storage.CodeInvalidObject, storage.CodeTooLarge:
		return nil
	}
	return err
}
