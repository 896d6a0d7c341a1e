package etcd3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/tracing"
)

// Defaults of the options.
const (
	// DefaultBookmarkInterval is how often a watch that asked for bookmarks
	// requests a progress notification from etcd.
	DefaultBookmarkInterval = time.Minute
	// DefaultMaxRevisionWait is how long a read of a revision etcd has not
	// reached yet waits for it, as kube-apiserver's watch cache does.
	DefaultMaxRevisionWait = 3 * time.Second
)

// Option configures the store New returns.
type Option func(*store)

// WithPrefix stores every key under prefix, as kube-apiserver's
// --etcd-prefix does: callers keep passing keys like
// "/wardle.example.com/flunders/ns/name" and never see the prefix.
func WithPrefix(prefix string) Option {
	return func(s *store) {
		s.prefix = strings.TrimSuffix(prefix, "/")
		if s.prefix != "" && !strings.HasPrefix(s.prefix, "/") {
			s.prefix = "/" + s.prefix
		}
	}
}

// WithBookmarkInterval sets how often watches that ask for bookmarks get
// one.
func WithBookmarkInterval(d time.Duration) Option {
	return func(s *store) {
		if d > 0 {
			s.bookmarkInterval = d
		}
	}
}

// WithMaxRevisionWait sets how long a read of a future revision waits for
// etcd to reach it before failing with ErrTooLargeResourceVersion.
func WithMaxRevisionWait(d time.Duration) Option {
	return func(s *store) { s.maxRevisionWait = d }
}

// WithMaxObjectBytes sets the size limit of a stored value (default
// storage.DefaultMaxObjectBytes, what etcd's default request limit holds):
// Create and GuaranteedUpdate refuse a larger one with storage.ErrTooLarge
// before sending it. A limit above what the etcd cluster accepts (its
// --max-request-bytes less storage.MaxObjectOverheadBytes) needs that flag
// raised on etcd; what etcd refuses is ErrTooLarge too.
func WithMaxObjectBytes(n int64) Option {
	return func(s *store) {
		if n > 0 {
			s.maxObjectBytes = n
		}
	}
}

type store struct {
	client           *clientv3.Client
	prefix           string
	bookmarkInterval time.Duration
	maxRevisionWait  time.Duration
	// members carry reads and writes (see failover.go): the client alone
	// unless WithMembers names others.
	members        members
	attemptTimeout time.Duration
	retryWindow    time.Duration
	maxObjectBytes int64

	mu       sync.Mutex
	closed   bool
	watchers map[*watcher]struct{}

	// progressOrder says whether etcd's progress notifications can be
	// trusted (see ProgressOrdered); the goroutine that learns it ends
	// at Close: stopCheck stops it, checked is closed when it returned.
	progressOrder atomic.Int32
	stopCheck     context.CancelFunc
	checked       chan struct{}
}

// New returns a storage.Interface on client. Close ends the store's
// watches but leaves the client open: it is the caller's.
func New(client *clientv3.Client, opts ...Option) storage.Interface {
	s := &store{
		client:           client,
		bookmarkInterval: DefaultBookmarkInterval,
		maxRevisionWait:  DefaultMaxRevisionWait,
		retryWindow:      DefaultRetryWindow,
		maxObjectBytes:   storage.DefaultMaxObjectBytes,
		watchers:         map[*watcher]struct{}{},
	}
	s.members.list = []*member{{kv: client}}
	for _, o := range opts {
		o(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopCheck, s.checked = cancel, make(chan struct{})
	go func() {
		defer close(s.checked)
		s.checkProgressOrder(ctx)
	}()
	return s
}

// full returns the etcd key of key.
func (s *store) full(key string) string {
	if s.prefix != "" && !strings.HasPrefix(key, "/") {
		return s.prefix + "/" + key
	}
	return s.prefix + key
}

// short returns the caller's key of an etcd key.
func (s *store) short(key []byte) string {
	return strings.TrimPrefix(string(key), s.prefix)
}

// mapErr turns a client error into a storage error: etcd's own verdicts
// keep their meaning, anything else (no leader, unreachable endpoints, a
// deadline) is ErrUnavailable. A caller that gave up gets its context's
// error back.
func (s *store) mapErr(ctx context.Context, op, key string, rev int64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return &storage.Error{Code: storage.CodeExpired, Key: key, Revision: rev,
			Message: fmt.Sprintf("too old resource version: %d", rev), Err: err}
	case errors.Is(err, rpctypes.ErrFutureRev):
		cur, cerr := s.currentRevision(ctx)
		if cerr != nil {
			return storage.NewUnavailable(fmt.Errorf("etcd3: %s %q: %w", op, key, cerr))
		}
		return storage.NewTooLargeResourceVersion(rev, cur)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("etcd3: %s %q: %w", op, key, ctx.Err())
	case errors.Is(err, rpctypes.ErrRequestTooLarge), status.Code(err) == codes.ResourceExhausted:
		// etcd's --max-request-bytes, or the client's send limit, is
		// below this store's object limit.
		return &storage.Error{Code: storage.CodeTooLarge, Key: key, Err: err,
			Message: "the object is larger than etcd accepts (its --max-request-bytes)"}
	}
	var se *storage.Error
	if errors.As(err, &se) {
		return err
	}
	return storage.NewUnavailable(fmt.Errorf("etcd3: %s %q: %w", op, key, err))
}

func (s *store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.NewUnavailable(errors.New("etcd3: store is closed"))
	}
	return nil
}

// Create implements storage.Interface.
func (s *store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	ctx, span := tracing.Start(ctx, "Create etcd3", attribute.String("key", key))
	defer span.End()
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if err := storage.CheckSize(value, s.maxObjectBytes); err != nil {
		return 0, err
	}
	k := s.full(key)
	var (
		rev    int64
		exists bool
	)
	err := s.call(ctx, true, func(ctx context.Context, kv clientv3.KV, retry bool) error {
		txn := kv.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(value)))
		if retry {
			txn = txn.Else(clientv3.OpGet(k))
		}
		resp, err := txn.Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			rev, exists = resp.Header.Revision, false
			return nil
		}
		exists = true
		if retry {
			// An earlier try may have committed before its answer was
			// lost: then the object stored is ours, by its uid.
			uid := objectUID(value)
			if uid == "" {
				return errCreateUnknown
			}
			if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 && objectUID(kvs[0].Value) == uid {
				rev, exists = kvs[0].CreateRevision, false
			}
		}
		return nil
	})
	if err != nil {
		return 0, s.mapErr(ctx, "create", key, 0, err)
	}
	if exists {
		return 0, storage.NewAlreadyExists(key)
	}
	return rev, nil
}

// get reads key; exists is false when it is absent.
func (s *store) get(ctx context.Context, key string) (kv storage.KeyValue, exists bool, rev int64, err error) {
	var resp *clientv3.GetResponse
	err = s.call(ctx, true, func(ctx context.Context, kv clientv3.KV, _ bool) (err error) {
		resp, err = kv.Get(ctx, s.full(key))
		return err
	})
	if err != nil {
		return storage.KeyValue{}, false, 0, s.mapErr(ctx, "get", key, 0, err)
	}
	if len(resp.Kvs) == 0 {
		return storage.KeyValue{}, false, resp.Header.Revision, nil
	}
	e := resp.Kvs[0]
	return storage.KeyValue{Key: key, Value: e.Value, Revision: e.ModRevision}, true, resp.Header.Revision, nil
}

// Get implements storage.Interface.
func (s *store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	ctx, span := tracing.Start(ctx, "Get etcd3", attribute.String("key", key))
	defer span.End()
	if err := s.checkOpen(); err != nil {
		return storage.KeyValue{}, err
	}
	kv, ok, rev, err := s.get(ctx, key)
	if err != nil {
		return storage.KeyValue{}, err
	}
	if opts.MinRevision > rev {
		if err := s.waitForRevision(ctx, opts.MinRevision); err != nil {
			return storage.KeyValue{}, err
		}
		if kv, ok, _, err = s.get(ctx, key); err != nil {
			return storage.KeyValue{}, err
		}
	}
	switch {
	case ok:
		return kv, nil
	case opts.IgnoreNotFound:
		return storage.KeyValue{}, nil
	default:
		return storage.KeyValue{}, storage.NewNotFound(key)
	}
}

func (s *store) currentRevision(ctx context.Context) (int64, error) {
	// A linearizable read of one key costs etcd the least and carries the
	// store's revision in its header.
	var resp *clientv3.GetResponse
	err := s.call(ctx, true, func(ctx context.Context, kv clientv3.KV, _ bool) (err error) {
		resp, err = kv.Get(ctx, s.full("/"), clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return 0, fmt.Errorf("etcd3: current revision: %w", ctx.Err())
		}
		return 0, storage.NewUnavailable(fmt.Errorf("etcd3: current revision: %w", err))
	}
	return resp.Header.Revision, nil
}

// CurrentRevision implements storage.Interface.
func (s *store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	return s.currentRevision(ctx)
}

// waitForRevision polls until etcd reaches rev, or fails with
// ErrTooLargeResourceVersion after s.maxRevisionWait. Polling is fine
// here: the wait is rare, short, and ends at the first write.
func (s *store) waitForRevision(ctx context.Context, rev int64) error {
	deadline := time.Now().Add(s.maxRevisionWait)
	pause := 10 * time.Millisecond
	for {
		cur, err := s.currentRevision(ctx)
		if err != nil {
			return err
		}
		if cur >= rev {
			return nil
		}
		if time.Now().Add(pause).After(deadline) {
			return storage.NewTooLargeResourceVersion(rev, cur)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return fmt.Errorf("etcd3: waiting for revision %d: %w", rev, ctx.Err())
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// GuaranteedUpdate implements storage.Interface: a compare-and-swap loop
// on the key's mod_revision.
func (s *store) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.KeyValue, error) {
	ctx, span := tracing.Start(ctx, "GuaranteedUpdate etcd3", attribute.String("key", key))
	defer span.End()
	if err := s.checkOpen(); err != nil {
		return storage.KeyValue{}, err
	}
	var (
		cur    storage.KeyValue
		exists bool
		fresh  = true
		err    error
	)
	if opts.Suggestion.Key != "" {
		cur, exists, fresh = opts.Suggestion, true, false
		cur.Key = key
	} else if cur, exists, _, err = s.get(ctx, key); err != nil {
		return storage.KeyValue{}, err
	}
	k := s.full(key)
	for {
		// A stale suggestion may explain any refusal or no-op: only a
		// fresh read is trusted with those.
		refresh := func() error {
			cur, exists, _, err = s.get(ctx, key)
			fresh = true
			return err
		}
		if !exists && !opts.IgnoreNotFound {
			if !fresh {
				if err := refresh(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return storage.KeyValue{}, storage.NewNotFound(key)
		}
		if !exists {
			cur = storage.KeyValue{}
		}
		if opts.Precondition != nil {
			if err := opts.Precondition(cur); err != nil {
				if !fresh {
					if err := refresh(); err != nil {
						return storage.KeyValue{}, err
					}
					continue
				}
				return storage.KeyValue{}, err
			}
		}
		newValue, err := tryUpdate(cur)
		if err != nil {
			if !fresh {
				if err := refresh(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return storage.KeyValue{}, err
		}
		if exists && bytes.Equal(newValue, cur.Value) {
			if !fresh {
				if err := refresh(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return cur, nil
		}
		if err := storage.CheckSize(newValue, s.maxObjectBytes); err != nil {
			if !fresh {
				if err := refresh(); err != nil {
					return storage.KeyValue{}, err
				}
				continue
			}
			return storage.KeyValue{}, err
		}
		var expect int64
		if exists {
			expect = cur.Revision
		}
		var (
			resp    *clientv3.TxnResponse
			applied int64 // the revision of an earlier try found committed
		)
		err = s.call(ctx, true, func(ctx context.Context, kv clientv3.KV, retry bool) (err error) {
			resp, err = kv.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(k), "=", expect)).
				Then(clientv3.OpPut(k, string(newValue))).
				Else(clientv3.OpGet(k)).
				Commit()
			if err != nil || resp.Succeeded || !retry {
				return err
			}
			applied, err = appliedUpdate(ctx, kv, k, expect, newValue, resp)
			return err
		})
		if err != nil {
			return storage.KeyValue{}, s.mapErr(ctx, "update", key, 0, err)
		}
		if resp.Succeeded {
			return storage.KeyValue{Key: key, Value: newValue, Revision: resp.Header.Revision}, nil
		}
		if applied != 0 {
			return storage.KeyValue{Key: key, Value: newValue, Revision: applied}, nil
		}
		// Lost the race: the Else branch read the winner's value.
		cur, exists, fresh = storage.KeyValue{}, false, true
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			cur, exists = storage.KeyValue{Key: key, Value: kvs[0].Value, Revision: kvs[0].ModRevision}, true
		}
	}
}

// Delete implements storage.Interface.
func (s *store) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.KeyValue, error) {
	ctx, span := tracing.Start(ctx, "Delete etcd3", attribute.String("key", key))
	defer span.End()
	if err := s.checkOpen(); err != nil {
		return storage.KeyValue{}, err
	}
	cur, exists, _, err := s.get(ctx, key)
	if err != nil {
		return storage.KeyValue{}, err
	}
	k := s.full(key)
	for {
		if !exists {
			return storage.KeyValue{}, storage.NewNotFound(key)
		}
		if opts.ExpectedRevision != 0 && opts.ExpectedRevision != cur.Revision {
			return storage.KeyValue{}, storage.NewConflict(key, cur.Revision)
		}
		if opts.Precondition != nil {
			if err := opts.Precondition(cur); err != nil {
				return storage.KeyValue{}, err
			}
		}
		var resp *clientv3.TxnResponse
		err := s.call(ctx, true, func(ctx context.Context, kv clientv3.KV, _ bool) (err error) {
			resp, err = kv.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(k), "=", cur.Revision)).
				Then(clientv3.OpDelete(k)).
				Else(clientv3.OpGet(k)).
				Commit()
			return err
		})
		if err != nil {
			return storage.KeyValue{}, s.mapErr(ctx, "delete", key, 0, err)
		}
		if resp.Succeeded {
			return storage.KeyValue{Key: key, Value: cur.Value, Revision: resp.Header.Revision}, nil
		}
		cur, exists = storage.KeyValue{}, false
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			cur, exists = storage.KeyValue{Key: key, Value: kvs[0].Value, Revision: kvs[0].ModRevision}, true
		}
	}
}

// Close implements storage.Interface: it ends the store's watches. The
// client stays open.
func (s *store) Close() error {
	s.mu.Lock()
	s.closed = true
	ws := make([]*watcher, 0, len(s.watchers))
	for w := range s.watchers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	s.stopCheck()
	for _, w := range ws {
		w.Stop()
	}
	s.members.close()
	<-s.checked
	return nil
}
