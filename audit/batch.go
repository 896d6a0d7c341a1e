package audit

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// The modes of --audit-log-mode, as kube-apiserver names them.
const (
	// ModeBatch buffers events and writes them from a goroutine of the
	// sink's own: a request never waits for the backend, and when the
	// buffer is full events are dropped.
	ModeBatch = "batch"
	// ModeBlocking writes each event before the request goes on; a failed
	// write is logged and the request served.
	ModeBlocking = "blocking"
	// ModeBlockingStrict is ModeBlocking, except that a request whose
	// RequestReceived event cannot be stored fails with 500.
	ModeBlockingStrict = "blocking-strict"
)

// Modes are the modes a backend runs in.
var Modes = []string{ModeBatch, ModeBlocking, ModeBlockingStrict}

// BatchConfig is how a batch-mode sink buffers and sends events (the
// --audit-*-batch-* flags).
type BatchConfig struct {
	// BufferSize is how many events wait at most; more are dropped.
	BufferSize int
	// MaxBatchSize is how many events are sent together at most.
	MaxBatchSize int
	// MaxBatchWait is how long a batch short of MaxBatchSize waits for more
	// events before it is sent; 0 sends what is there.
	MaxBatchWait time.Duration
	// ThrottleEnable limits batches to ThrottleQPS a second, with bursts
	// of ThrottleBurst.
	ThrottleEnable bool
	ThrottleQPS    float32
	ThrottleBurst  int
}

// StrictSink is a Sink that says whether it stored an event; the audit
// filter fails a request whose RequestReceived event it could not store.
type StrictSink interface {
	Sink
	Store(ev *Event) error
}

// StorerSink is a backend that can report a failed write: the log file
// and the webhook.
type StorerSink interface {
	Sink
	store(ev *Event) error
}

// Strict makes s a StrictSink (blocking-strict mode).
func Strict(s StorerSink) StrictSink { return strict{s} }

type strict struct{ StorerSink }

func (s strict) Store(ev *Event) error { return s.store(ev) }

// Union logs each event to every sink; as a StrictSink it fails when a
// strict one among them does. Nil for none, the sink itself for one.
func Union(sinks ...Sink) Sink {
	switch len(sinks) {
	case 0:
		return nil
	case 1:
		return sinks[0]
	}
	return union(sinks)
}

type union []Sink

func (u union) Log(ev *Event) {
	for _, s := range u {
		s.Log(ev)
	}
}

func (u union) Store(ev *Event) error {
	var errs []error
	for _, s := range u {
		if st, ok := s.(StrictSink); ok {
			errs = append(errs, st.Store(ev))
		} else {
			s.Log(ev)
		}
	}
	return errors.Join(errs...)
}

// BatchSink hands events to another sink from a goroutine of its own, in
// batches, as kube-apiserver's buffered backend does: Log only queues the
// event, so a slow or failing backend never holds up a request; a full
// queue drops the event, counted (Dropped) and logged.
type BatchSink struct {
	next    Sink
	cfg     BatchConfig
	limiter *rate.Limiter

	mu     sync.RWMutex // guards closed against Log's sends
	closed bool
	queue  chan *Event
	done   chan struct{}

	dropped    atomic.Int64
	lastLogged atomic.Int64 // unix nanoseconds of the last drop logged
}

// NewBatchSink starts sending events to next as cfg says; Close stops it.
func NewBatchSink(next Sink, cfg BatchConfig) *BatchSink {
	b := &BatchSink{next: next, cfg: cfg, queue: make(chan *Event, max(cfg.BufferSize, 1)), done: make(chan struct{})}
	if cfg.ThrottleEnable {
		b.limiter = rate.NewLimiter(rate.Limit(cfg.ThrottleQPS), cfg.ThrottleBurst)
	}
	go b.run()
	return b
}

// Log implements Sink: it queues a copy of ev, or drops it when the
// queue is full or the sink closed.
func (b *BatchSink) Log(ev *Event) {
	cp := *ev
	cp.Annotations = maps.Clone(ev.Annotations)
	b.mu.RLock()
	defer b.mu.RUnlock()
	if !b.closed {
		select {
		case b.queue <- &cp:
			return
		default:
		}
	}
	n := b.dropped.Add(1)
	// One line a second at most: a backend that cannot keep up would
	// otherwise flood the server's own log.
	now, last := time.Now().UnixNano(), b.lastLogged.Load()
	if now-last >= int64(time.Second) && b.lastLogged.CompareAndSwap(last, now) {
		slog.Error("audit buffer queue blocked: events dropped", "auditID", ev.AuditID, "droppedTotal", n)
	}
}

// Dropped is how many events were dropped since the sink started.
func (b *BatchSink) Dropped() int64 { return b.dropped.Load() }

// Close stops taking events, sends those queued and returns when they
// have been handed on.
func (b *BatchSink) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.queue)
	b.mu.Unlock()
	<-b.done
	return nil
}

func (b *BatchSink) run() {
	defer close(b.done)
	for {
		batch, open := b.collect()
		if len(batch) > 0 {
			if b.limiter != nil {
				// No context: batches stop when the queue closes, and a
				// throttled wait is bounded by 1/QPS.
				r := b.limiter.Reserve()
				time.Sleep(r.Delay())
			}
			if bl, ok := b.next.(BatchLogger); ok {
				bl.LogBatch(batch)
			} else {
				for _, ev := range batch {
					b.next.Log(ev)
				}
			}
		}
		if !open {
			return
		}
	}
}

// collect gathers up to MaxBatchSize events, waiting at most MaxBatchWait
// after the first for the rest; open is false once the queue is closed
// and drained.
func (b *BatchSink) collect() (batch []*Event, open bool) {
	ev, ok := <-b.queue
	if !ok {
		return nil, false
	}
	batch = append(batch, ev)
	var timeout <-chan time.Time
	if b.cfg.MaxBatchWait > 0 {
		t := time.NewTimer(b.cfg.MaxBatchWait)
		defer t.Stop()
		timeout = t.C
	}
	for len(batch) < b.cfg.MaxBatchSize {
		if timeout == nil {
			select {
			case ev, ok := <-b.queue:
				if !ok {
					return batch, false
				}
				batch = append(batch, ev)
				continue
			default:
				return batch, true
			}
		}
		select {
		case ev, ok := <-b.queue:
			if !ok {
				return batch, false
			}
			batch = append(batch, ev)
		case <-timeout:
			return batch, true
		}
	}
	return batch, true
}

// ValidateBatch checks a backend's mode and, in batch mode, its batch
// settings, with kube-apiserver's messages; plugin is "log" or "webhook".
func ValidateBatch(plugin, mode string, cfg BatchConfig) error {
	switch mode {
	case ModeBatch:
	case ModeBlocking, ModeBlockingStrict:
		return nil // the batch settings are not used
	default:
		return fmt.Errorf("invalid audit %s mode %s, allowed modes are %q", plugin, mode, strings.Join(Modes, ","))
	}
	switch {
	case cfg.BufferSize <= 0:
		return fmt.Errorf("invalid audit batch %s buffer size %v, must be a positive number", plugin, cfg.BufferSize)
	case cfg.MaxBatchSize <= 0:
		return fmt.Errorf("invalid audit batch %s max batch size %v, must be a positive number", plugin, cfg.MaxBatchSize)
	case cfg.ThrottleEnable && cfg.ThrottleQPS <= 0:
		return fmt.Errorf("invalid audit batch %s throttle QPS %v, must be a positive number", plugin, cfg.ThrottleQPS)
	case cfg.ThrottleEnable && cfg.ThrottleBurst <= 0:
		return fmt.Errorf("invalid audit batch %s throttle burst %v, must be a positive number", plugin, cfg.ThrottleBurst)
	}
	return nil
}
