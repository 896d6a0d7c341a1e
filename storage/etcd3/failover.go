package etcd3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Fail-over. kube-apiserver hands every call to one etcd client and waits:
// a write that a follower forwarded to a leader that has just died waits
// for etcd's own request timeout (7 s with the default election timeout),
// and a call routed to a frozen member waits as long as the member is
// frozen. With WithMembers and WithAttemptTimeout the store instead tries
// each call on one member for at most the attempt timeout, passes over a
// member that failed until a probe finds it answering, and tries again on
// another member. Reads are always safe to try again; a write is made safe
// by its compare-and-swap (a second try cannot apply twice) and by
// recognising a first try that committed although its answer was lost: a
// create by the uid of the object now stored, an update by the revision it
// replaced.

// DefaultRetryWindow bounds how long a call is tried again after transient
// errors, when the caller's context allows longer: long enough for an etcd
// leader election, short enough that a cluster without quorum is reported.
const DefaultRetryWindow = 10 * time.Second

// probeInterval is how often a member that failed a call is probed.
const probeInterval = 250 * time.Millisecond

// troubleWindow is how long after a member failed a call the tries of
// every call are bounded tighter (see tryTimeout).
const troubleWindow = 5 * time.Second

// WithMembers sends the store's reads and writes through kvs, one per
// member of the cluster (DialMembers makes them), instead of through the
// client given to New, whose balancer cannot tell a frozen member from a
// busy one. A member that fails a call, or does not answer within the
// attempt timeout, is passed over until a probe finds it answering again.
// When kvs are whole clients (clientv3.Watcher too), each watch goes
// through one of them that is up, and ends with ErrUnavailable when that
// member fails a call and then a probe, so that its consumer resumes it
// on another; otherwise
// watches stay on the client given to New. Compaction always does.
func WithMembers(kvs ...clientv3.KV) Option {
	return func(s *store) {
		if len(kvs) > 0 {
			s.members.list = s.members.list[:0]
			for _, kv := range kvs {
				w, _ := kv.(clientv3.Watcher)
				s.members.list = append(s.members.list, &member{kv: kv, watcher: w})
			}
		}
	}
}

// DefaultAttemptTimeout is the bound on one try that storage/backend and
// the --etcd-attempt-timeout flag use by default: far above a healthy
// member's answer, short enough that a write routed to a frozen member or a
// dead leader is tried again elsewhere within two seconds (see
// docs/failover.md).
const DefaultAttemptTimeout = time.Second

// WithAttemptTimeout bounds each try of a read or write on one member (0,
// the default: as long as the caller's context allows). A try that takes
// longer is abandoned and the call is tried again on another member, within
// the caller's context and DefaultRetryWindow. Lists are not bounded: a
// long one is not a sign of a failed member.
func WithAttemptTimeout(d time.Duration) Option {
	return func(s *store) { s.attemptTimeout = max(d, 0) }
}

// WithRetryWindow sets how long a call is tried again after transient
// errors; see DefaultRetryWindow.
func WithRetryWindow(d time.Duration) Option {
	return func(s *store) {
		if d > 0 {
			s.retryWindow = d
		}
	}
}

// DialMembers returns one client per endpoint of cfg, for WithMembers. It
// does not wait for the members to answer: one may be down while the
// store starts. The clients do not retry a failed call themselves (the
// store tries another member instead); the caller closes them.
func DialMembers(cfg Config) ([]*clientv3.Client, error) {
	tlsCfg, err := cfg.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd3: %w", err)
	}
	level := cfg.LogLevel
	if level == nil {
		level = defaultLogLevel
	}
	var clients []*clientv3.Client
	for _, ep := range cfg.Endpoints {
		c, err := clientv3.New(clientv3.Config{
			Endpoints: []string{ep},
			TLS:       tlsCfg,
			Logger:    ZapLogger(cfg.Logger, level),
			// One retry of the client's own, not its default hundred:
			// on a member that is down they would spend the whole
			// attempt on it.
			MaxUnaryRetries:      1,
			DialKeepAliveTime:    keepAliveTime,
			DialKeepAliveTimeout: keepAliveTimeout,
			DialOptions:          traceDialOptions(),
		})
		if err != nil {
			for _, c := range clients {
				c.Close()
			}
			return nil, fmt.Errorf("etcd3: client of %s: %w", ep, err)
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// member is one way to the cluster.
type member struct {
	kv clientv3.KV
	// watcher carries the watches of the member, when its KV is a whole
	// client; nil: they go through the store's client.
	watcher clientv3.Watcher
	// down is set when a call through the member failed, and cleared by
	// the probe it starts.
	down atomic.Bool

	mu   sync.Mutex
	fell chan struct{} // closed when the member goes down; nil until asked
}

// fallen returns a channel closed when the member, down, next fails a
// probe: a watch on a member that froze would otherwise wait as long as
// the freeze. A member that failed a call but answers the probe keeps its
// watches: under load, or while the cluster elects a leader, calls fail
// on members that are alive.
func (m *member) fallen() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fell == nil {
		m.fell = make(chan struct{})
	}
	return m.fell
}

// fall closes the channel fallen returned, if any.
func (m *member) fall() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fell != nil {
		close(m.fell)
		m.fell = nil
	}
}

// members picks the member each try of a call goes to, and probes the
// ones that failed. Its zero value is ready; close ends the probes.
type members struct {
	list []*member
	next atomic.Uint64
	// lastFailure is when a member last failed a call, in Unix
	// nanoseconds.
	lastFailure atomic.Int64

	mu     sync.Mutex
	closed bool
	ctx    context.Context // of the probes; made by the first one
	cancel context.CancelFunc
	probes sync.WaitGroup
}

// pick returns the next member, round robin, passing over the ones that are
// down and the one the previous try failed on (after, nil on a first try).
// When every other member is down too, as while the cluster elects a
// leader, it takes one of them anyway: they are the only way there is.
func (ms *members) pick(after *member) *member {
	n := uint64(len(ms.list))
	start := ms.next.Add(1)
	var fallback *member
	for i := range n {
		m := ms.list[(start+i)%n]
		if m == after && n > 1 {
			continue
		}
		if !m.down.Load() {
			return m
		}
		if fallback == nil {
			fallback = m
		}
	}
	if fallback == nil {
		fallback = ms.list[start%n]
	}
	return fallback
}

// failed marks m down and, unless it was already, probes it every
// probeInterval until it answers a serializable read within timeout.
func (ms *members) failed(m *member, timeout time.Duration) {
	ms.lastFailure.Store(time.Now().UnixNano())
	if len(ms.list) < 2 || !m.down.CompareAndSwap(false, true) {
		return
	}
	if timeout <= 0 {
		timeout = time.Second
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.closed {
		return
	}
	if ms.ctx == nil {
		ms.ctx, ms.cancel = context.WithCancel(context.Background())
	}
	ctx := ms.ctx
	ms.probes.Add(1)
	go func() {
		defer ms.probes.Done()
		t := time.NewTicker(probeInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, cancel := context.WithTimeout(ctx, timeout)
			// The key kube-apiserver's etcd health check reads;
			// serializable because a member that lost its leader still
			// answers, and takes writes again after the election.
			_, err := m.kv.Get(pctx, "health", clientv3.WithSerializable())
			cancel()
			if err == nil {
				m.down.Store(false)
				return
			}
			// Not even a local read answers: the member is gone or
			// frozen, not merely slow or between leaders, and its
			// watches must move.
			m.fall()
		}
	}()
}

// troubled reports whether a member failed a call within troubleWindow.
func (ms *members) troubled() bool {
	last := ms.lastFailure.Load()
	return last != 0 && time.Since(time.Unix(0, last)) < troubleWindow
}

// close ends the probes and waits for them.
func (ms *members) close() {
	ms.mu.Lock()
	ms.closed = true
	if ms.cancel != nil {
		ms.cancel()
	}
	ms.mu.Unlock()
	ms.probes.Wait()
}

// watchVia returns what a new watch goes through: a member that is up,
// when the members carry watches, with a channel closed when that member
// fails a call and a probe (the watch then ends, to be resumed on another
// member); else the
// store's client, and a nil channel.
func (s *store) watchVia() (clientv3.Watcher, <-chan struct{}) {
	if len(s.members.list) > 1 {
		if m := s.members.pick(nil); m.watcher != nil {
			return m.watcher, m.fallen()
		}
	}
	return s.client, nil
}

// retrying reports whether calls are tried more than once.
func (s *store) retrying() bool {
	return len(s.members.list) > 1 || s.attemptTimeout > 0
}

// call runs try on a member, and again on others while it fails with a
// transient error, the caller waits and the retry window lasts. bounded
// says whether one try is bounded by the attempt timeout. try is told
// whether an earlier try may have been applied although it failed.
func (s *store) call(ctx context.Context, bounded bool, try func(ctx context.Context, kv clientv3.KV, retry bool) error) error {
	var (
		m     *member
		err   error
		start = time.Now()
		pause = 10 * time.Millisecond
	)
	for attempt := 0; ; attempt++ {
		m = s.members.pick(m)
		actx, cancel := ctx, context.CancelFunc(func() {})
		if bounded && s.attemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, s.tryTimeout(attempt))
		}
		// A member without a leader refuses at once instead of holding
		// the call until etcd's request timeout.
		err = try(clientv3.WithRequireLeader(actx), m.kv, attempt > 0)
		cancel()
		if err == nil || !s.retrying() || ctx.Err() != nil || !transient(err) {
			return err
		}
		s.members.failed(m, s.attemptTimeout)
		if time.Since(start)+pause > s.retryWindow {
			return err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return err
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// tryTimeout bounds the try numbered attempt (from 0) of a call. While a
// member has failed recently, the cluster may be electing a leader: a
// write a follower forwarded to the dead leader is lost and would wait the
// whole attempt timeout, although the new leader takes writes as soon as
// it is elected, one to two election timeouts after the loss. Then the
// first quickTries tries of a call get a quarter of the attempt timeout,
// so that the first try after the election is not long in coming; later
// ones double up to the whole, so that a cluster merely slow still gets
// whole tries.
func (s *store) tryTimeout(attempt int) time.Duration {
	if !s.members.troubled() {
		return s.attemptTimeout
	}
	quarter := s.attemptTimeout / 4
	if attempt < quickTries {
		return quarter
	}
	return min(s.attemptTimeout, quarter<<min(attempt-quickTries+1, 2))
}

// quickTries is how many tries of a call get a quarter of the attempt
// timeout after a failure: with the default, 2 s, the longest an etcd
// election takes after its leader was lost.
const quickTries = 8

// transient reports whether err says nothing about the request itself:
// the member or its leader is gone, the member is overloaded, or the try
// ran out of time.
func transient(err error) bool {
	if errors.Is(err, rpctypes.ErrTooManyRequests) {
		// A member whose applied index lags its commit index (one that
		// has just thawed, say) refuses before proposing: the others
		// may take the call.
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded:
			return true
		}
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// errCreateUnknown is the answer to a create whose earlier try failed and
// whose key now exists, when the value has no uid to tell whose it is.
var errCreateUnknown = errors.New("the create may have been applied: its answer was lost and the value has no uid to tell")

// objectUID reads metadata.uid of a JSON object; "" when there is none.
func objectUID(value []byte) string {
	var obj struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if json.Unmarshal(value, &obj) != nil {
		return ""
	}
	return obj.Metadata.UID
}

// appliedUpdate tells whether the update of k from revision expect to
// newValue, which resp (an Else branch's read) refused, was committed by an
// earlier try whose answer was lost, and at which revision (0: it was
// not). It was if the key holds newValue and the value before it was the
// one at expect: the revision the update replaced identifies it.
func appliedUpdate(ctx context.Context, kv clientv3.KV, k string, expect int64, newValue []byte, resp *clientv3.TxnResponse) (int64, error) {
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || kvs[0].ModRevision <= expect || !bytes.Equal(kvs[0].Value, newValue) {
		return 0, nil
	}
	rev := kvs[0].ModRevision
	prev, err := kv.Get(ctx, k, clientv3.WithRev(rev-1))
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return 0, nil // cannot tell: a conflict, as if it was not
	case err != nil:
		return 0, err
	}
	var before int64
	if len(prev.Kvs) > 0 {
		before = prev.Kvs[0].ModRevision
	}
	if before != expect {
		return 0, nil
	}
	return rev, nil
}
