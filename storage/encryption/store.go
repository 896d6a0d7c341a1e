package encryption

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apikit-dev/apikit/storage"
)

// Wrap returns st with every value written through t.ToStorage and read
// through t.FromStorage. prefix is what the backend puts before keys in
// etcd (kube-apiserver's /registry): AES-GCM authenticates the full key, as
// kube-apiserver does, so values stay readable by either. Close does not
// close st, which the storage assembly shares between resources.
func Wrap(st storage.Interface, t Transformer, prefix string) storage.Interface {
	return &store{inner: st, t: t, prefix: prefix}
}

type store struct {
	inner  storage.Interface
	t      Transformer
	prefix string
}

var _ storage.ProgressOrderer = (*store)(nil)

func (s *store) etcdKey(key string) string { return s.prefix + key }

// decrypt returns kv with its value decrypted. A value that cannot be read
// is an internal error, not a missing object, as in kube-apiserver.
func (s *store) decrypt(kv storage.KeyValue) (storage.KeyValue, error) {
	if kv.Value == nil {
		return kv, nil
	}
	v, err := s.t.FromStorage(s.etcdKey(kv.Key), kv.Value)
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("decrypting %s: %w", kv.Key, err)
	}
	kv.Value = v
	return kv, nil
}

func (s *store) encrypt(key string, value []byte) ([]byte, error) {
	out, err := s.t.ToStorage(s.etcdKey(key), value)
	if err != nil {
		return nil, fmt.Errorf("encrypting %s: %w", key, err)
	}
	return out, nil
}

func (s *store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	enc, err := s.encrypt(key, value)
	if err != nil {
		return 0, err
	}
	rev, err := s.inner.Create(ctx, key, enc)
	return rev, tooLarge(err, len(value), len(enc))
}

// tooLarge restates the backend's refusal of an encrypted value in terms of
// the value the client wrote: its size, and the limit less what encryption
// adds to it.
func tooLarge(err error, plain, encrypted int) error {
	var se *storage.Error
	if !errors.As(err, &se) || se.Code != storage.CodeTooLarge || se.Limit == 0 {
		return err
	}
	return storage.NewTooLarge(int64(plain), se.Limit-int64(encrypted-plain))
}

func (s *store) Get(ctx context.Context, key string, opts storage.GetOptions) (storage.KeyValue, error) {
	kv, err := s.inner.Get(ctx, key, opts)
	if err != nil {
		return kv, err
	}
	return s.decrypt(kv)
}

func (s *store) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, tryUpdate storage.UpdateFunc) (storage.KeyValue, error) {
	if opts.Suggestion.Key != "" {
		// A suggestion comes from the watch cache above, in plaintext.
		enc, err := s.encrypt(key, opts.Suggestion.Value)
		if err != nil {
			return storage.KeyValue{}, err
		}
		opts.Suggestion.Value = enc
		opts.Suggestion.Memo = nil
	}
	if pre := opts.Precondition; pre != nil {
		opts.Precondition = func(cur storage.KeyValue) error {
			plain, err := s.decrypt(cur)
			if err != nil {
				return err
			}
			return pre(plain)
		}
	}
	var plainLen, encLen int
	kv, err := s.inner.GuaranteedUpdate(ctx, key, opts, func(cur storage.KeyValue) ([]byte, error) {
		plain, err := s.decrypt(cur)
		if err != nil {
			return nil, err
		}
		next, err := tryUpdate(plain)
		if err != nil {
			return nil, err
		}
		if cur.Value != nil && bytes.Equal(next, plain.Value) {
			return cur.Value, nil // unchanged: nothing is written
		}
		enc, err := s.encrypt(key, next)
		plainLen, encLen = len(next), len(enc)
		return enc, err
	})
	if err != nil {
		return kv, tooLarge(err, plainLen, encLen)
	}
	return s.decrypt(kv)
}

func (s *store) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.KeyValue, error) {
	if pre := opts.Precondition; pre != nil {
		opts.Precondition = func(cur storage.KeyValue) error {
			plain, err := s.decrypt(cur)
			if err != nil {
				return err
			}
			return pre(plain)
		}
	}
	kv, err := s.inner.Delete(ctx, key, opts)
	if err != nil {
		return kv, err
	}
	return s.decrypt(kv)
}

// List lists with the backend and decrypts. The backend cannot apply a
// selector to encrypted values (AES-GCM needs each value's key, which a
// predicate is not given), so a filtered list reads pages from the backend
// until it has Limit matching items, and filters them decrypted.
func (s *store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	pred := opts.Predicate
	if pred.Empty() {
		res, err := s.inner.List(ctx, prefix, opts)
		if err != nil {
			return res, err
		}
		items := make([]storage.KeyValue, len(res.Items))
		for i, kv := range res.Items {
			if items[i], err = s.decrypt(kv); err != nil {
				return storage.ListResult{}, err
			}
		}
		res.Items = items
		return res, nil
	}
	opts.Predicate = storage.Predicate{}
	limit := opts.Limit
	var out storage.ListResult
	for {
		if limit > 0 {
			opts.Limit = limit - int64(len(out.Items))
		}
		res, err := s.inner.List(ctx, prefix, opts)
		if err != nil {
			return res, err
		}
		out.Revision, out.Continue = res.Revision, res.Continue
		for _, kv := range res.Items {
			plain, err := s.decrypt(kv)
			if err != nil {
				return storage.ListResult{}, err
			}
			ok, err := pred.Matches(plain.Value, nil)
			if err != nil {
				return storage.ListResult{}, err
			}
			if ok {
				out.Items = append(out.Items, plain)
			}
		}
		if res.Continue == "" || limit == 0 || int64(len(out.Items)) >= limit {
			return out, nil
		}
		// The next page at the same revision, for what is still missing.
		opts.Continue, opts.Revision, opts.Match, opts.AnyRevision = res.Continue, 0, storage.MatchDefault, false
	}
}

// Watch watches with the backend and decrypts; a selector is applied here,
// to the decrypted values (see List): an object that starts matching is
// Added, one that stops matching Deleted.
func (s *store) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (storage.Watcher, error) {
	pred := opts.Predicate
	opts.Predicate = storage.Predicate{}
	inner, err := s.inner.Watch(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	w := &watcher{inner: inner, out: make(chan storage.Event), stop: make(chan struct{})}
	go w.run(s, pred)
	if pr, ok := inner.(storage.ProgressRequester); ok {
		return &progressWatcher{watcher: w, pr: pr}, nil
	}
	return w, nil
}

func (s *store) CurrentRevision(ctx context.Context) (int64, error) {
	return s.inner.CurrentRevision(ctx)
}

// Close does nothing: the backend is shared and closed by its owner.
func (s *store) Close() error { return nil }

// ProgressOrdered implements storage.ProgressOrderer as the backend does;
// a backend without the notion is trusted, as a watch cache trusts it.
func (s *store) ProgressOrdered() bool {
	if po, ok := s.inner.(storage.ProgressOrderer); ok {
		return po.ProgressOrdered()
	}
	return true
}

// watcher decrypts the events of a backend's watch. Its goroutine ends
// when the backend's channel closes (Stop, the context, or an error).
type watcher struct {
	inner    storage.Watcher
	out      chan storage.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *watcher) run(s *store, pred storage.Predicate) {
	defer close(w.out)
	for ev := range w.inner.ResultChan() {
		if ev.Value != nil || ev.PrevValue != nil {
			var err error
			if ev.Value != nil {
				ev.Value, err = s.t.FromStorage(s.etcdKey(ev.Key), ev.Value)
			}
			if err == nil && ev.PrevValue != nil {
				ev.PrevValue, err = s.t.FromStorage(s.etcdKey(ev.Key), ev.PrevValue)
			}
			ev.Memo = nil
			var pass bool
			if err == nil {
				pass, err = filter(&ev, pred)
			}
			if err != nil {
				ev = storage.Event{Type: storage.ErrorEvent, Key: ev.Key, Revision: ev.Revision,
					Err: fmt.Errorf("decrypting %s: %w", ev.Key, err)}
			} else if !pass {
				continue
			}
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			w.inner.Stop()
			for range w.inner.ResultChan() {
			}
			return
		}
		if ev.Type == storage.ErrorEvent {
			w.inner.Stop()
			for range w.inner.ResultChan() {
			}
			return
		}
	}
}

// filter applies pred to a decrypted event, turning an object that starts
// or stops matching into Added or Deleted; pass is false when the event
// concerns no matching object.
func filter(ev *storage.Event, pred storage.Predicate) (pass bool, err error) {
	if pred.Empty() {
		return true, nil
	}
	now, err := pred.Matches(ev.Value, nil)
	if err != nil || ev.Type != storage.Modified {
		return now, err
	}
	before := false
	if ev.PrevValue != nil {
		if before, err = pred.Matches(ev.PrevValue, nil); err != nil {
			return false, err
		}
	}
	switch {
	case now && !before:
		ev.Type = storage.Added
	case !now && before:
		// As the backends report it: the last value that matched.
		ev.Type, ev.Value, ev.PrevValue = storage.Deleted, ev.PrevValue, nil
	}
	return now || before, nil
}

func (w *watcher) ResultChan() <-chan storage.Event { return w.out }

func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.inner.Stop()
}

// progressWatcher passes RequestProgress on to a backend that has it.
type progressWatcher struct {
	*watcher
	pr storage.ProgressRequester
}

func (w *progressWatcher) RequestProgress(ctx context.Context) error {
	return w.pr.RequestProgress(ctx)
}
