package audit

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// gateSink holds every Log until the gate opens, and records the events.
type gateSink struct {
	entered chan string
	gate    chan struct{}
	mu      sync.Mutex
	ids     []string
}

func newGateSink() *gateSink {
	return &gateSink{entered: make(chan string, 1000), gate: make(chan struct{})}
}

func (g *gateSink) Log(ev *Event) {
	g.entered <- ev.AuditID
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ids = append(g.ids, ev.AuditID)
}

func (g *gateSink) got() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.ids...)
}

// within fails the test when f does not return in time: a Log that
// blocks would hang it otherwise.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestBatchSinkNeverBlocks: with the backend stuck, Log still returns at
// once; the buffer fills and then drops, counted; once the backend moves,
// what was queued reaches it in order, and Close waits for that.
func TestBatchSinkNeverBlocks(t *testing.T) {
	next := newGateSink()
	b := NewBatchSink(next, BatchConfig{BufferSize: 10, MaxBatchSize: 1})
	within(t, 10*time.Second, "Log", func() { b.Log(&Event{AuditID: "0"}) })
	if id := <-next.entered; id != "0" {
		t.Fatalf("the backend got %s first", id)
	}
	// The backend is stuck on event 0: ten more fit, forty are dropped.
	within(t, 10*time.Second, "Log with the backend stuck", func() {
		for i := 1; i <= 50; i++ {
			b.Log(&Event{AuditID: fmt.Sprint(i), Annotations: map[string]string{"k": "v"}})
		}
	})
	if d := b.Dropped(); d != 40 {
		t.Errorf("dropped %d, want 40", d)
	}
	close(next.gate)
	within(t, 30*time.Second, "Close", func() { _ = b.Close() })
	want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
	if got := next.got(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the backend got %v, want %v", got, want)
	}
	b.Log(&Event{AuditID: "late"}) // after Close: dropped, no panic
	if d := b.Dropped(); d != 41 {
		t.Errorf("dropped %d after Close, want 41", d)
	}
}

func TestBatchSinkBatches(t *testing.T) {
	next := newGateSink()
	close(next.gate)
	// A batch of up to 100 waits at most 20 ms for more: three events
	// arrive without filling it.
	b := NewBatchSink(next, BatchConfig{BufferSize: 100, MaxBatchSize: 100, MaxBatchWait: 20 * time.Millisecond,
		ThrottleEnable: true, ThrottleQPS: 100, ThrottleBurst: 1})
	defer b.Close()
	for i := range 3 {
		b.Log(&Event{AuditID: fmt.Sprint(i)})
	}
	for deadline := time.Now().Add(30 * time.Second); len(next.got()) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the batch was never sent: %v", next.got())
		}
	}
	if got := next.got(); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("got %v", got)
	}
}

func TestValidateBatch(t *testing.T) {
	good := BatchConfig{BufferSize: 1, MaxBatchSize: 1}
	for _, tc := range []struct {
		mode string
		cfg  BatchConfig
		want string
	}{
		{ModeBatch, good, ""},
		{ModeBlocking, BatchConfig{}, ""},
		{ModeBlockingStrict, BatchConfig{}, ""},
		{"async", good, `invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict"`},
		{ModeBatch, BatchConfig{MaxBatchSize: 1}, "invalid audit batch log buffer size 0, must be a positive number"},
		{ModeBatch, BatchConfig{BufferSize: 1, MaxBatchSize: -1}, "invalid audit batch log max batch size -1, must be a positive number"},
		{ModeBatch, BatchConfig{BufferSize: 1, MaxBatchSize: 1, ThrottleEnable: true, ThrottleBurst: 1}, "invalid audit batch log throttle QPS 0, must be a positive number"},
		{ModeBatch, BatchConfig{BufferSize: 1, MaxBatchSize: 1, ThrottleEnable: true, ThrottleQPS: 1.5}, "invalid audit batch log throttle burst 0, must be a positive number"},
	} {
		got := ""
		if err := ValidateBatch("log", tc.mode, tc.cfg); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s %+v: %q, want %q", tc.mode, tc.cfg, got, tc.want)
		}
	}
}
