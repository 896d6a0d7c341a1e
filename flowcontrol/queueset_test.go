package flowcontrol

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func mustQueueSet(t *testing.T, cfg queueSetConfig, clock func() time.Time) *queueSet {
	t.Helper()
	qs, err := newQueueSet("test", cfg, clock)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func seats(n int) WorkEstimate { return WorkEstimate{InitialSeats: n} }

// flowOn returns a flow that a hand of one card deals to queue q.
func flowOn(q int, name string) flowID {
	return flowID{hash: uint64(q), schema: "s", distinguisher: name}
}

// startAsync starts a request in a goroutine and reports its outcome.
type outcome struct {
	name   string
	req    *qsRequest
	reason string
}

func startAsync(qs *queueSet, f flowID, w WorkEstimate, wait time.Duration, out chan<- outcome) {
	go func() {
		r, reason := qs.start(context.Background(), f, w, wait)
		out <- outcome{f.distinguisher, r, reason}
	}()
}

// waitFor waits until qs has n requests waiting.
func waitFor(t *testing.T, qs *queueSet, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		qs.mu.Lock()
		w := qs.requestsWaiting
		qs.mu.Unlock()
		if w == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests waiting, want %d", w, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFairQueuingServesTheLightFlowFirst(t *testing.T) {
	clock := newFakeClock()
	qs := mustQueueSet(t, queueSetConfig{queues: 8, handSize: 1, queueLengthLimit: 100, concurrencyLimit: 2}, clock.Now)
	// The heavy flow takes both seats and queues four more requests.
	var running []*qsRequest
	for range 2 {
		r, reason := qs.start(context.Background(), flowOn(0, "heavy"), seats(1), time.Minute)
		if r == nil {
			t.Fatal(reason)
		}
		running = append(running, r)
	}
	out := make(chan outcome, 10)
	for i := range 4 {
		startAsync(qs, flowOn(0, "heavy"), seats(1), time.Minute, out)
		waitFor(t, qs, i+1)
	}
	clock.Step(100 * time.Millisecond)
	startAsync(qs, flowOn(1, "light"), seats(1), time.Minute, out)
	waitFor(t, qs, 5)

	// A seat frees up: the light flow's request, arrived last, goes first.
	clock.Step(100 * time.Millisecond)
	running[0].finish()
	got := <-out
	if got.name != "light" {
		t.Fatalf("dispatched %s first, want the light flow", got.name)
	}
	got.req.finish()
	running[1].finish()
	for range 2 {
		o := <-out
		if o.name != "heavy" {
			t.Fatalf("dispatched %s, want heavy", o.name)
		}
		o.req.finish()
	}
	for range 2 {
		(<-out).req.finish()
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.seatsInUse != 0 || qs.requestsExecuting != 0 || qs.requestsWaiting != 0 || qs.seatsWaiting != 0 {
		t.Fatalf("after all finished: seats %d, executing %d, waiting %d (%d seats)",
			qs.seatsInUse, qs.requestsExecuting, qs.requestsWaiting, qs.seatsWaiting)
	}
}

func TestVirtualTimeAdvancesAtTheFairRate(t *testing.T) {
	clock := newFakeClock()
	qs := mustQueueSet(t, queueSetConfig{queues: 8, handSize: 1, queueLengthLimit: 100, concurrencyLimit: 10}, clock.Now)
	// Idle: virtual time stands still.
	clock.Step(time.Second)
	qs.mu.Lock()
	qs.syncTimeLocked()
	if qs.currentR != 0 {
		t.Fatalf("idle R = %v, want 0", qs.currentR)
	}
	qs.mu.Unlock()
	// Two active queues using 3 and 1 seats: R advances at min(4, 10)/2.
	a, _ := qs.start(context.Background(), flowOn(0, "a"), seats(3), time.Minute)
	b, _ := qs.start(context.Background(), flowOn(1, "b"), seats(1), time.Minute)
	clock.Step(2 * time.Second)
	qs.mu.Lock()
	qs.syncTimeLocked()
	if want := 4.0; math.Abs(qs.currentR-want) > 1e-9 {
		t.Fatalf("R = %v after 2s, want %v", qs.currentR, want)
	}
	// The queues were charged G per seat at dispatch.
	if q := qs.queues[0]; math.Abs(q.nextDispatchR-3*estimatedServiceDuration.Seconds()) > 1e-9 {
		t.Fatalf("queue 0 next dispatch R = %v", q.nextDispatchR)
	}
	qs.mu.Unlock()
	// Finishing after 2s credits (G - 2s) per seat.
	a.finish()
	qs.mu.Lock()
	if q := qs.queues[0]; math.Abs(q.nextDispatchR-3*2) > 1e-9 {
		t.Fatalf("queue 0 next dispatch R after finishing = %v, want 6", q.nextDispatchR)
	}
	qs.mu.Unlock()
	// Saturated: 15 seats requested, the limit is 10, one active queue.
	c, _ := qs.start(context.Background(), flowOn(2, "c"), seats(9), time.Minute)
	out := make(chan outcome, 1)
	startAsync(qs, flowOn(2, "c"), seats(5), time.Minute, out)
	waitFor(t, qs, 1)
	b.finish()
	qs.mu.Lock()
	r0 := qs.currentR
	qs.mu.Unlock()
	clock.Step(time.Second)
	qs.mu.Lock()
	qs.syncTimeLocked()
	if got := qs.currentR - r0; math.Abs(got-10) > 1e-9 {
		t.Fatalf("R advanced %v in 1s, want 10", got)
	}
	qs.mu.Unlock()
	c.finish()
	(<-out).req.finish()
}

func TestSeatAccounting(t *testing.T) {
	clock := newFakeClock()
	qs := mustQueueSet(t, queueSetConfig{queues: 4, handSize: 1, queueLengthLimit: 10, concurrencyLimit: 10}, clock.Now)
	wide, _ := qs.start(context.Background(), flowOn(0, "wide"), seats(6), time.Minute)
	out := make(chan outcome, 4)
	// A second wide request does not fit (6+6 > 10) and waits; a narrow
	// one behind it in its queue waits too (FIFO).
	startAsync(qs, flowOn(1, "wide2"), seats(6), time.Minute, out)
	waitFor(t, qs, 1)
	startAsync(qs, flowOn(1, "narrow"), seats(1), time.Minute, out)
	waitFor(t, qs, 2)
	qs.mu.Lock()
	if qs.seatsInUse != 6 || qs.seatsWaiting != 7 {
		t.Fatalf("seats in use %d, waiting %d; want 6 and 7", qs.seatsInUse, qs.seatsWaiting)
	}
	qs.mu.Unlock()
	// A narrow request of another flow has an earlier virtual finish than
	// the wide one and fits: it runs at once.
	other, reason := qs.start(context.Background(), flowOn(2, "other"), seats(1), time.Minute)
	if other == nil {
		t.Fatalf("narrow request of an idle queue: %s", reason)
	}
	other.finish()
	wide.finish()
	a, b := <-out, <-out
	qs.mu.Lock()
	if qs.seatsInUse != 7 || qs.requestsExecuting != 2 {
		t.Fatalf("seats in use %d with %d executing, want 7 and 2", qs.seatsInUse, qs.requestsExecuting)
	}
	qs.mu.Unlock()
	a.req.finish()
	b.req.finish()
	a.req.finish() // idempotent

	// Final seats stay in use for the additional latency.
	r, _ := qs.start(context.Background(), flowOn(0, "write"), WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 30 * time.Millisecond}, time.Minute)
	qs.mu.Lock()
	if qs.seatsInUse != 3 {
		t.Fatalf("a write with 3 final seats holds %d", qs.seatsInUse)
	}
	qs.mu.Unlock()
	r.finish()
	qs.mu.Lock()
	if qs.seatsInUse != 3 {
		t.Fatalf("right after finishing, %d seats in use, want 3", qs.seatsInUse)
	}
	qs.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		qs.mu.Lock()
		n := qs.seatsInUse
		qs.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("final seats never released: %d in use", n)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A request wider than the whole limit runs alone.
	big, reason := qs.start(context.Background(), flowOn(0, "huge"), seats(20), time.Minute)
	if big == nil {
		t.Fatalf("a request wider than the limit on an idle level: %s", reason)
	}
	startAsync(qs, flowOn(1, "after"), seats(1), time.Minute, out)
	waitFor(t, qs, 1)
	big.finish()
	(<-out).req.finish()
}

func TestQueueLimits(t *testing.T) {
	clock := newFakeClock()
	qs := mustQueueSet(t, queueSetConfig{queues: 1, handSize: 1, queueLengthLimit: 2, concurrencyLimit: 1}, clock.Now)
	r, _ := qs.start(context.Background(), flowOn(0, "a"), seats(1), time.Minute)
	out := make(chan outcome, 4)
	startAsync(qs, flowOn(0, "b"), seats(1), time.Minute, out)
	waitFor(t, qs, 1)
	// c's wait limit is real time: long enough that c is still queued when
	// waitFor looks and d is refused, on a loaded machine too (20 ms was
	// not, under -race at load 15), short enough to wait for below.
	startAsync(qs, flowOn(0, "c"), seats(1), time.Second, out)
	waitFor(t, qs, 2)
	// The queue is full and the seats are taken: refused at once.
	if r2, reason := qs.start(context.Background(), flowOn(0, "d"), seats(1), time.Minute); r2 != nil || reason != rejectQueueFull {
		t.Fatalf("full queue: %v %q", r2, reason)
	}
	// c waited longer than its limit.
	if o := <-out; o.name != "c" || o.req != nil || o.reason != rejectTimeout {
		t.Fatalf("got %+v, want c timed out", o)
	}
	// A cancelled context takes the request out of its queue.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, qs, 2)
		cancel()
	}()
	if r3, reason := qs.start(ctx, flowOn(0, "e"), seats(1), time.Minute); r3 != nil || reason != rejectCancelled {
		t.Fatalf("cancelled: %v %q", r3, reason)
	}
	r.finish()
	o := <-out
	if o.name != "b" || o.req == nil {
		t.Fatalf("got %+v, want b dispatched", o)
	}
	o.req.finish()

	// Wide requests: seats are left (40 of 46 in use) but the next one
	// does not fit; a full queue still refuses, it does not grow.
	wide := mustQueueSet(t, queueSetConfig{queues: 1, handSize: 1, queueLengthLimit: 2, concurrencyLimit: 46}, clock.Now)
	var held []*qsRequest
	for range 4 {
		w, _ := wide.start(context.Background(), flowOn(0, "w"), seats(10), time.Minute)
		held = append(held, w)
	}
	wout := make(chan outcome, 2)
	for i := range 2 {
		startAsync(wide, flowOn(0, "w"), seats(10), time.Minute, wout)
		waitFor(t, wide, i+1)
	}
	if w, reason := wide.start(context.Background(), flowOn(0, "w"), seats(10), time.Minute); w != nil || reason != rejectQueueFull {
		t.Fatalf("full queue of wide requests: %v %q", w, reason)
	}
	for _, w := range held {
		w.finish()
	}
	(<-wout).req.finish()
	(<-wout).req.finish()

	// Without queues (Reject): run now or be refused.
	rej := mustQueueSet(t, queueSetConfig{concurrencyLimit: 1}, clock.Now)
	x, _ := rej.start(context.Background(), flowOn(0, "x"), seats(1), time.Minute)
	if y, reason := rej.start(context.Background(), flowOn(0, "y"), seats(1), time.Minute); y != nil || reason != rejectConcurrencyLimit {
		t.Fatalf("reject level: %v %q", y, reason)
	}
	x.finish()
}

func TestReconfigureKeepsWaitingRequests(t *testing.T) {
	clock := newFakeClock()
	qs := mustQueueSet(t, queueSetConfig{queues: 8, handSize: 1, queueLengthLimit: 10, concurrencyLimit: 1}, clock.Now)
	r, _ := qs.start(context.Background(), flowOn(7, "a"), seats(1), time.Minute)
	out := make(chan outcome, 1)
	startAsync(qs, flowOn(7, "b"), seats(1), time.Minute, out)
	waitFor(t, qs, 1)
	// Fewer queues: queue 7 drains before it goes; more seats dispatch b.
	if err := qs.setConfig(queueSetConfig{queues: 2, handSize: 1, queueLengthLimit: 10, concurrencyLimit: 2}); err != nil {
		t.Fatal(err)
	}
	o := <-out
	if o.req == nil {
		t.Fatalf("b: %s", o.reason)
	}
	qs.mu.Lock()
	if len(qs.queues) != 8 {
		t.Fatalf("%d queues while queue 7 still runs requests", len(qs.queues))
	}
	qs.mu.Unlock()
	r.finish()
	o.req.finish()
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if len(qs.queues) != 2 {
		t.Fatalf("%d queues after draining, want 2", len(qs.queues))
	}
}

func TestDealer(t *testing.T) {
	for _, tc := range []struct{ deck, hand int }{{128, 6}, {64, 8}, {16, 4}, {7, 7}, {1, 1}, {2, 2}} {
		d, err := newDealer(tc.deck, tc.hand)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]int, tc.deck)
		const hands = 60000
		for i := range hands {
			seen := map[int]bool{}
			d.deal(flowHash("schema", "user-"+itoa(i)), func(c int) {
				if c < 0 || c >= tc.deck || seen[c] {
					t.Fatalf("deck %d hand %d: card %d (dealt %v)", tc.deck, tc.hand, c, seen)
				}
				seen[c] = true
				counts[c]++
			})
			if len(seen) != tc.hand {
				t.Fatalf("deck %d: hand of %d cards, want %d", tc.deck, len(seen), tc.hand)
			}
		}
		// Every queue is dealt about as often: within 10% of the mean.
		mean := float64(hands*tc.hand) / float64(tc.deck)
		for c, n := range counts {
			if math.Abs(float64(n)-mean) > 0.1*mean {
				t.Errorf("deck %d hand %d: card %d dealt %d times, mean %.0f", tc.deck, tc.hand, c, n, mean)
			}
		}
	}
	if _, err := newDealer(128, 20); err == nil {
		t.Error("a hand needing more than 60 hash bits was accepted")
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
