package etcd3

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
)

// lossyKV commits transactions but, while lose is positive, answers the
// caller with an error instead: the reply of a write lost with its member.
type lossyKV struct {
	clientv3.KV
	lose atomic.Int32
}

func (l *lossyKV) Txn(ctx context.Context) clientv3.Txn {
	return &lossyTxn{Txn: l.KV.Txn(ctx), kv: l}
}

type lossyTxn struct {
	clientv3.Txn
	kv *lossyKV
}

func (t *lossyTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *lossyTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *lossyTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *lossyTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err == nil && t.kv.lose.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "connection lost after the request was sent")
	}
	return resp, err
}

// TestLostAnswers commits a write whose answer is lost: the store tries it
// again on another member and must recognise its own committed write,
// neither applying it twice nor refusing it as a conflict.
func TestLostAnswers(t *testing.T) {
	client := newClient(t, etcdtest.Start(t))
	var n atomic.Int64
	newStore := func(t *testing.T) (storage.Interface, *lossyKV) {
		// Two members that share the count of answers to lose: the
		// first try loses its answer whichever member it goes to.
		lossy := &lossyKV{KV: client}
		s := New(client, WithPrefix(fmt.Sprintf("/lost-%d", n.Add(1))), WithMembers(lossy, lossy))
		t.Cleanup(func() { s.Close() })
		return s, lossy
	}
	obj := func(uid, value string) []byte {
		return fmt.Appendf(nil, `{"metadata":{"name":"a","uid":%q},"value":%q}`, uid, value)
	}

	t.Run("create recognised by its uid", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		s, lossy := newStore(t)
		lossy.lose.Store(1)
		rev, err := s.Create(ctx, "/k", obj("uid-1", "v"))
		if err != nil {
			t.Fatalf("Create after a lost answer: %v, want success", err)
		}
		got, err := s.Get(ctx, "/k", storage.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != rev {
			t.Errorf("Create returned revision %d, the object is at %d", rev, got.Revision)
		}
		if lossy.lose.Load() >= 0 {
			t.Errorf("no answer was lost: the test proves nothing")
		}
	})

	t.Run("another object's create is still AlreadyExists", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		s, lossy := newStore(t)
		if _, err := s.Create(ctx, "/k", obj("uid-other", "v")); err != nil {
			t.Fatal(err)
		}
		lossy.lose.Store(1)
		// The first try is refused (the key exists) and its answer lost;
		// the second sees a different uid.
		_, err := s.Create(ctx, "/k", obj("uid-2", "v"))
		if storage.CodeOf(err) != storage.CodeAlreadyExists {
			t.Fatalf("Create of an existing key after a lost answer: %v, want AlreadyExists", err)
		}
	})

	t.Run("create of a value without uid is not guessed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		s, lossy := newStore(t)
		lossy.lose.Store(1)
		_, err := s.Create(ctx, "/k", []byte("raw"))
		if storage.CodeOf(err) != storage.CodeUnavailable {
			t.Fatalf("Create without uid after a lost answer: %v, want Unavailable", err)
		}
	})

	t.Run("update recognised by the revision it replaced", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		s, lossy := newStore(t)
		if _, err := s.Create(ctx, "/k", []byte("0")); err != nil {
			t.Fatal(err)
		}
		lossy.lose.Store(1)
		var tries int
		kv, err := s.GuaranteedUpdate(ctx, "/k", storage.UpdateOptions{}, func(cur storage.KeyValue) ([]byte, error) {
			tries++
			n, err := strconv.Atoi(string(cur.Value))
			if err != nil {
				return nil, err
			}
			return []byte(strconv.Itoa(n + 1)), nil
		})
		if err != nil {
			t.Fatalf("GuaranteedUpdate after a lost answer: %v", err)
		}
		got, err := s.Get(ctx, "/k", storage.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Value) != "1" || tries != 1 {
			t.Errorf("counter = %s after %d calls of the update function, want 1 after 1: the update was applied twice", got.Value, tries)
		}
		if kv.Revision != got.Revision || string(kv.Value) != "1" {
			t.Errorf("GuaranteedUpdate returned %q at %d, stored is %q at %d", kv.Value, kv.Revision, got.Value, got.Revision)
		}
	})
}

// failoverStore starts a three-member etcd cluster and a store under
// prefix on it with the fail-over options: a client per member (returned
// in the cluster's member order) and attempts of 500 ms. Both close when
// the test ends.
func failoverStore(t *testing.T, prefix string) (*etcdtest.Cluster, storage.Interface, []*clientv3.Client) {
	t.Helper()
	cluster := etcdtest.StartCluster(t, 3)
	client := newClient(t, cluster.Endpoints())
	clients, err := DialMembers(Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	var kvs []clientv3.KV
	for _, c := range clients {
		t.Cleanup(func() { c.Close() })
		kvs = append(kvs, c)
	}
	s := New(client, WithPrefix(prefix), WithMembers(kvs...), WithAttemptTimeout(500*time.Millisecond))
	t.Cleanup(func() { s.Close() })
	return cluster, s, clients
}

// TestFrozenMember freezes one member of a three-member cluster for far
// longer than any call may take: with the fail-over options every read and
// write completes on the other members, where the client alone holds the
// calls routed to the frozen member until it thaws.
func TestFrozenMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-member etcd cluster")
	}
	cluster, s, _ := failoverStore(t, "/frozen")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	leader, err := cluster.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Connections are made on first use: warm them all up, as a server
	// that has been running has, or the frozen member's would never be
	// ready and the balancer would never pick it.
	// (With uids, as in TestWatchLeavesFrozenMember.)
	for i := range 9 {
		if _, err := s.Create(ctx, fmt.Sprintf("/warm%d", i), fmt.Appendf(nil, `{"metadata":{"uid":"w%d"}}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	frozen := cluster.Followers(leader)[0]
	const freeze = 20 * time.Second
	frozen.Freeze()
	thawed := time.AfterFunc(freeze, frozen.Thaw)
	defer func() {
		if thawed.Stop() {
			frozen.Thaw()
		}
	}()

	// Far below the freeze, far above a try on a busy machine.
	const bound = 8 * time.Second
	started := time.Now()
	var slowest time.Duration
	for i := range 12 {
		key := fmt.Sprintf("/k%d", i)
		for _, op := range []struct {
			name string
			do   func() error
		}{
			{"create", func() error {
				_, err := s.Create(ctx, key, fmt.Appendf(nil, `{"metadata":{"uid":"u%d"}}`, i))
				return err
			}},
			{"update", func() error {
				_, err := s.GuaranteedUpdate(ctx, key, storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) {
					return fmt.Appendf(nil, `{"metadata":{"uid":"u%d"},"n":1}`, i), nil
				})
				return err
			}},
			{"get", func() error { _, err := s.Get(ctx, key, storage.GetOptions{}); return err }},
			{"list", func() error { _, err := s.List(ctx, "/", storage.ListOptions{}); return err }},
		} {
			t0 := time.Now()
			err := op.do()
			took := time.Since(t0)
			slowest = max(slowest, took)
			if err != nil {
				t.Fatalf("%s %s while a member is frozen: %v (after %v)", op.name, key, err, took)
			}
			if took > bound {
				t.Fatalf("%s %s took %v while a member is frozen, want under %v", op.name, key, took, bound)
			}
		}
	}
	if time.Since(started) > freeze {
		t.Logf("the calls outlasted the freeze: the test proves less than it should (machine too busy?)")
	}
	t.Logf("48 calls with %s frozen; slowest %v", frozen.Name, slowest)
}

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no leader", rpctypes.ErrNoLeader, true},
		{"etcd request timeout", rpctypes.ErrTimeoutDueToLeaderFail, true},
		{"grpc unavailable", status.Error(codes.Unavailable, "connection refused"), true},
		{"member lagging behind", rpctypes.ErrTooManyRequests, true},
		{"database full", rpctypes.ErrNoSpace, false},
		{"attempt deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{"compacted", rpctypes.ErrCompacted, false},
		{"future revision", rpctypes.ErrFutureRev, false},
		{"request too large", rpctypes.ErrRequestTooLarge, false},
		{"canceled", context.Canceled, false},
		{"other", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := transient(tc.err); got != tc.want {
				t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestPick(t *testing.T) {
	a, b, c := &member{}, &member{}, &member{}
	for _, tc := range []struct {
		name  string
		down  []*member
		after *member
		want  []*member // any of
	}{
		{"all up: any", nil, nil, []*member{a, b, c}},
		{"passes over a member that is down", []*member{b}, nil, []*member{a, c}},
		{"passes over the member of the failed try", nil, a, []*member{b, c}},
		{"only one is up", []*member{a, c}, nil, []*member{b}},
		{"all down: still one, not the failed one", []*member{a, b, c}, a, []*member{b, c}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := &members{list: []*member{a, b, c}}
			for _, m := range ms.list {
				m.down.Store(false)
			}
			for _, m := range tc.down {
				m.down.Store(true)
			}
			for range 10 {
				got := ms.pick(tc.after)
				ok := false
				for _, w := range tc.want {
					ok = ok || got == w
				}
				if !ok {
					t.Fatalf("pick chose a member it should not")
				}
			}
		})
	}
}

func TestTryTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		troubled bool
		attempt  int
		want     time.Duration
	}{
		{"healthy: the attempt timeout", false, 0, time.Second},
		{"healthy, a later try: the attempt timeout", false, 3, time.Second},
		{"after a failure: a quarter first", true, 0, 250 * time.Millisecond},
		{"after a failure: a quarter for the quick tries", true, quickTries - 1, 250 * time.Millisecond},
		{"after a failure: then half", true, quickTries, 500 * time.Millisecond},
		{"after a failure: then whole tries", true, quickTries + 1, time.Second},
		{"after a failure: never more", true, quickTries + 9, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(nil, WithAttemptTimeout(time.Second)).(*store)
			if tc.troubled {
				s.members.lastFailure.Store(time.Now().UnixNano())
			}
			if got := s.tryTimeout(tc.attempt); got != tc.want {
				t.Errorf("tryTimeout(%d) = %v, want %v", tc.attempt, got, tc.want)
			}
		})
	}
}

// TestWatchLeavesFrozenMember freezes the member a watch runs on: the
// watch must end with ErrUnavailable once the member fails a call (its
// consumer then resumes it elsewhere), not wait out the freeze, and a
// watch resumed from its last revision must see the writes made since.
func TestWatchLeavesFrozenMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-member etcd cluster")
	}
	cluster, s, clients := failoverStore(t, "/watchfrozen")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Warm up every member's connection. The values carry uids, so that a
	// create whose answer a loaded machine delays past the attempt timeout
	// is recognised as the store's own when it is retried.
	for i := range 9 {
		if _, err := s.Create(ctx, fmt.Sprintf("/warm%d", i), fmt.Appendf(nil, `{"metadata":{"uid":"w%d"}}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := cluster.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A watch on a follower: freezing the leader would test an election.
	var (
		w        storage.Watcher
		frozen   *etcdtest.Member
		lastSeen int64
	)
	for range 6 {
		rev, err := s.CurrentRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lastSeen = rev
		cand, err := s.Watch(ctx, "/", storage.WatchOptions{Revision: rev})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range clients {
			if cand.(*watcher).via == clientv3.Watcher(c) && cluster.Members[i] != leader {
				w, frozen = cand, cluster.Members[i]
			}
		}
		if w != nil {
			break
		}
		cand.Stop()
	}
	if w == nil {
		t.Fatal("no watch went through a follower")
	}
	defer w.Stop()

	const freeze = 20 * time.Second
	frozen.Freeze()
	thawed := time.AfterFunc(freeze, frozen.Thaw)
	defer func() {
		if thawed.Stop() {
			frozen.Thaw()
		}
	}()
	started := time.Now()
	ended := false
	for i := 0; !ended; i++ {
		if time.Since(started) > 8*time.Second {
			t.Fatalf("the watch on the frozen member %s did not end within 8s (freeze: %v)", frozen.Name, freeze)
		}
		if _, err := s.Create(ctx, fmt.Sprintf("/k%d", i), fmt.Appendf(nil, `{"metadata":{"uid":"u%d"}}`, i)); err != nil {
			t.Fatalf("create while %s is frozen: %v", frozen.Name, err)
		}
		drain := time.After(100 * time.Millisecond)
	events:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok || ev.Type == storage.ErrorEvent {
					if ok && storage.CodeOf(ev.Err) != storage.CodeUnavailable {
						t.Fatalf("the watch ended with %v, want ErrUnavailable", ev.Err)
					}
					ended = true
					break events
				}
				lastSeen = max(lastSeen, ev.Revision)
			case <-drain:
				break events
			}
		}
	}
	t.Logf("the watch on %s ended %v after the freeze", frozen.Name, time.Since(started).Round(time.Millisecond))

	// Resumed from what it saw, it gets the writes it missed, while the
	// member is still frozen.
	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := s.Watch(ctx, "/", storage.WatchOptions{Revision: lastSeen})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Stop()
	timeout := time.After(8 * time.Second)
	for lastSeen < rev {
		select {
		case ev, ok := <-resumed.ResultChan():
			if !ok || ev.Type == storage.ErrorEvent {
				t.Fatalf("the resumed watch ended: %v", ev.Err)
			}
			lastSeen = max(lastSeen, ev.Revision)
		case <-timeout:
			t.Fatalf("the resumed watch reached revision %d of %d in 8s", lastSeen, rev)
		}
	}
}
