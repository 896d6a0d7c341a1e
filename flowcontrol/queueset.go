package flowcontrol

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/metrics"
)

// estimatedServiceDuration is G, the service time fair queuing assumes for
// a request when it is dispatched; the queue is credited or charged the
// difference when the request finishes. Kubernetes uses 3 s as well.
const estimatedServiceDuration = 3 * time.Second

// Reasons a request is refused, as Kubernetes names them.
const (
	rejectQueueFull        = metrics.RejectQueueFull
	rejectConcurrencyLimit = metrics.RejectConcurrencyLimit
	rejectTimeout          = metrics.RejectTimeout
	rejectCancelled        = metrics.RejectCancelled
)

// queueSetConfig shapes a queueSet. queues == 0 means no queuing: a
// request runs at once or is rejected.
type queueSetConfig struct {
	queues, handSize, queueLengthLimit int
	// concurrencyLimit is the seats the level may use at once.
	concurrencyLimit int
	// exempt levels never wait; they only count.
	exempt bool
}

// queueSet is the fair-queuing dispatcher of one priority level, the
// algorithm of Kubernetes' queueset: shuffle sharding picks a flow's queue
// among its hand; requests are dispatched in the order of their virtual
// finish times, in a virtual time R that advances at the rate each active
// queue would be served at were the seats shared fairly; a request costs
// its seats times its duration (G when dispatched, the actual duration
// once it finishes), plus its final seats times its additional latency.
type queueSet struct {
	name  string
	clock func() time.Time

	mu     sync.Mutex
	cfg    queueSetConfig
	dealer dealer
	// queues[:cfg.queues] take new requests; queues past them are left
	// over from a larger configuration and drain.
	queues []*queue

	// currentR is the virtual time, in seat-seconds; lastRealTime is when
	// it was last advanced.
	currentR     float64
	lastRealTime time.Time
	robinIndex   int

	requestsWaiting, requestsExecuting int
	seatsWaiting, seatsInUse           int

	// demand integrates seatsInUse+seatsWaiting over time, for borrowing.
	demand integrator

	// Counters for the debug dump.
	dispatched, rejected, timedOut, cancelled int64
}

// queue is one FIFO of a queueSet.
type queue struct {
	index int
	// waiting is a FIFO: head is the oldest request.
	head, tail   *qsRequest
	length       int
	seatsWaiting int
	// nextDispatchR is the virtual time at which the queue's head may start.
	nextDispatchR     float64
	requestsExecuting int
	seatsInUse        int
}

// flowID identifies a request's flow.
type flowID struct {
	hash                  uint64
	schema, distinguisher string
}

// qsRequest is one request inside a queueSet.
type qsRequest struct {
	qs    *queueSet
	queue *queue // nil for exempt and queueless levels
	work  WorkEstimate
	// arrivalR is the virtual time at arrival; arrival and start the real
	// times of arrival and dispatch.
	arrivalR       float64
	arrival, start time.Time
	flow           uint64
	// schema and distinguisher identify the flow in the debug dump.
	schema, distinguisher string

	// state is guarded by qs.mu.
	state      requestState
	prev, next *qsRequest
	// decided is closed when a waiting request is dispatched.
	decided chan struct{}
}

type requestState uint8

const (
	stateWaiting requestState = iota
	stateExecuting
	stateFinishing // final seats held for the additional latency
	stateDone
	stateRejected
)

func newQueueSet(name string, cfg queueSetConfig, clock func() time.Time) (*queueSet, error) {
	qs := &queueSet{name: name, clock: clock}
	now := clock()
	qs.lastRealTime = now
	qs.demand.reset(now, 0)
	if err := qs.setConfig(cfg); err != nil {
		return nil, err
	}
	return qs, nil
}

// setConfig changes the shape of the queueSet. Requests already waiting
// stay where they are; queues beyond a smaller count drain and vanish.
func (qs *queueSet) setConfig(cfg queueSetConfig) error {
	var d dealer
	if !cfg.exempt && cfg.queues > 0 {
		var err error
		if d, err = newDealer(cfg.queues, cfg.handSize); err != nil {
			return err
		}
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.syncTimeLocked()
	qs.cfg, qs.dealer = cfg, d
	for len(qs.queues) < cfg.queues {
		qs.queues = append(qs.queues, &queue{index: len(qs.queues), nextDispatchR: qs.currentR})
	}
	qs.trimQueuesLocked()
	qs.dispatchAsMuchAsPossibleLocked()
	return nil
}

// setConcurrencyLimit changes the seats the level may use (borrowing).
func (qs *queueSet) setConcurrencyLimit(cl int) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.cfg.concurrencyLimit == cl {
		return
	}
	qs.syncTimeLocked()
	qs.cfg.concurrencyLimit = cl
	qs.dispatchAsMuchAsPossibleLocked()
}

// trimQueuesLocked drops empty queues beyond the configured count.
func (qs *queueSet) trimQueuesLocked() {
	for n := len(qs.queues); n > qs.cfg.queues; n-- {
		q := qs.queues[n-1]
		if q.length > 0 || q.requestsExecuting > 0 {
			return
		}
		qs.queues[n-1] = nil
		qs.queues = qs.queues[:n-1]
	}
	if qs.robinIndex >= len(qs.queues) {
		qs.robinIndex = 0
	}
}

// virtualTimeRatioLocked is how fast R advances: the seats each active
// queue would get if the seats requested (up to the limit) were shared
// equally among them.
func (qs *queueSet) virtualTimeRatioLocked() float64 {
	active, requested := 0, 0
	for _, q := range qs.queues {
		if q.length > 0 || q.requestsExecuting > 0 {
			active++
			requested += q.seatsInUse + q.seatsWaiting
		}
	}
	if active == 0 {
		return 0
	}
	return math.Min(float64(requested), float64(qs.cfg.concurrencyLimit)) / float64(active)
}

func (qs *queueSet) syncTimeLocked() time.Time {
	now := qs.clock()
	if dt := now.Sub(qs.lastRealTime); dt > 0 {
		qs.currentR += qs.virtualTimeRatioLocked() * dt.Seconds()
		qs.lastRealTime = now
	}
	return now
}

// noteDemandLocked records the seat demand after a change.
func (qs *queueSet) noteDemandLocked(now time.Time) {
	qs.demand.set(now, float64(qs.seatsInUse+qs.seatsWaiting))
}

// start asks to run a request with the given work. It returns when the
// request may run (a nil error), or with the reason it may not: the queue
// is full, the wait limit passed, or ctx ended.
func (qs *queueSet) start(ctx context.Context, f flowID, work WorkEstimate, waitLimit time.Duration) (*qsRequest, string) {
	qs.mu.Lock()
	now := qs.syncTimeLocked()
	r := &qsRequest{qs: qs, work: work, flow: f.hash, schema: f.schema, distinguisher: f.distinguisher,
		arrival: now, arrivalR: qs.currentR}
	seats := work.MaxSeats()
	switch {
	case qs.cfg.exempt:
		qs.executeLocked(r, now)
		qs.mu.Unlock()
		return r, ""
	case qs.cfg.queues == 0:
		if !qs.canAccommodateLocked(seats) {
			qs.rejected++
			qs.mu.Unlock()
			return nil, rejectConcurrencyLimit
		}
		qs.executeLocked(r, now)
		qs.mu.Unlock()
		return r, ""
	}
	q := qs.shuffleShardLocked(f.hash)
	if q.length == 0 && q.requestsExecuting == 0 {
		// An idle queue starts now in virtual time: no credit for the past.
		q.nextDispatchR = qs.currentR
	}
	r.queue = q
	if qs.requestsWaiting == 0 && qs.canAccommodateLocked(seats) {
		// Nothing waits anywhere: enqueueing and dispatching would pick
		// this request; skip the queue (and the channel).
		qs.executeLocked(r, now)
		q.nextDispatchR += r.totalWork()
		qs.mu.Unlock()
		return r, ""
	}
	if q.length >= qs.cfg.queueLengthLimit {
		// Kubernetes refuses only when every seat is taken too; with
		// requests several seats wide the seats left may never fit the
		// next one, and the queue would grow without bound.
		qs.rejected++
		qs.mu.Unlock()
		return nil, rejectQueueFull
	}
	r.decided = make(chan struct{})
	q.push(r)
	qs.requestsWaiting++
	qs.seatsWaiting += seats
	qs.boundNextDispatchLocked(q)
	qs.dispatchAsMuchAsPossibleLocked()
	qs.noteDemandLocked(now)
	if r.state == stateExecuting {
		qs.mu.Unlock()
		return r, ""
	}
	qs.mu.Unlock()

	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	reason := ""
	select {
	case <-r.decided:
		return r, ""
	case <-timer.C:
		reason = rejectTimeout
	case <-ctx.Done():
		reason = rejectCancelled
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if r.state != stateWaiting {
		// Dispatched while the timer fired: run it.
		return r, ""
	}
	now = qs.syncTimeLocked()
	q.remove(r)
	r.state = stateRejected
	qs.requestsWaiting--
	qs.seatsWaiting -= seats
	if reason == rejectTimeout {
		qs.timedOut++
	} else {
		qs.cancelled++
	}
	qs.boundNextDispatchLocked(q)
	qs.trimQueuesLocked()
	// The head may have been what held the others up.
	qs.dispatchAsMuchAsPossibleLocked()
	qs.noteDemandLocked(now)
	return nil, reason
}

// shuffleShardLocked picks, among the flow's hand, the queue with the
// fewest seats waiting and in use.
func (qs *queueSet) shuffleShardLocked(flow uint64) *queue {
	best, bestSeats := -1, math.MaxInt
	qs.dealer.deal(flow, func(card int) {
		q := qs.queues[card]
		if s := q.seatsWaiting + q.seatsInUse; s < bestSeats {
			best, bestSeats = card, s
		}
	})
	return qs.queues[best]
}

// canAccommodateLocked reports whether a request of the given seats fits
// now. One wider than the whole limit runs alone.
func (qs *queueSet) canAccommodateLocked(seats int) bool {
	if seats > qs.cfg.concurrencyLimit {
		return qs.requestsExecuting == 0
	}
	return qs.seatsInUse+seats <= qs.cfg.concurrencyLimit
}

func (qs *queueSet) executeLocked(r *qsRequest, now time.Time) {
	seats := r.work.MaxSeats()
	r.state = stateExecuting
	r.start = now
	qs.requestsExecuting++
	qs.seatsInUse += seats
	qs.dispatched++
	if q := r.queue; q != nil {
		q.requestsExecuting++
		q.seatsInUse += seats
	}
	qs.noteDemandLocked(now)
}

func (qs *queueSet) dispatchAsMuchAsPossibleLocked() {
	for qs.requestsWaiting > 0 && qs.seatsInUse < qs.cfg.concurrencyLimit && qs.dispatchLocked() {
	}
	// A request wider than the limit may run once nothing else does.
	if qs.requestsWaiting > 0 && qs.requestsExecuting == 0 {
		qs.dispatchLocked()
	}
}

// dispatchLocked starts the waiting request with the earliest virtual
// finish time, if it fits; it reports whether it did.
func (qs *queueSet) dispatchLocked() bool {
	q := qs.findDispatchQueueLocked()
	if q == nil {
		return false
	}
	r := q.head
	if !qs.canAccommodateLocked(r.work.MaxSeats()) {
		// The fairest request waits for seats; dispatching a narrower
		// one past it would starve wide requests.
		return false
	}
	now := qs.clock()
	q.remove(r)
	qs.requestsWaiting--
	qs.seatsWaiting -= r.work.MaxSeats()
	qs.executeLocked(r, now)
	q.nextDispatchR += r.totalWork()
	close(r.decided)
	return true
}

// findDispatchQueueLocked returns the non-empty queue whose head has the
// earliest virtual finish time, starting the scan after the last winner so
// that ties go round robin.
func (qs *queueSet) findDispatchQueueLocked() *queue {
	n := len(qs.queues)
	var best *queue
	bestFinish, bestIndex := math.Inf(1), 0
	for range n {
		qs.robinIndex = (qs.robinIndex + 1) % n
		q := qs.queues[qs.robinIndex]
		if q.length == 0 {
			continue
		}
		if finish := q.nextDispatchR + q.head.totalWork(); finish < bestFinish {
			best, bestFinish, bestIndex = q, finish, qs.robinIndex
		}
	}
	if best != nil {
		qs.robinIndex = bestIndex
	}
	return best
}

// boundNextDispatchLocked is Kubernetes' anti-windup: a queue that could
// not use its share must not bank virtual time ahead of its oldest
// request's arrival.
func (qs *queueSet) boundNextDispatchLocked(q *queue) {
	if q.head != nil && q.nextDispatchR < q.head.arrivalR {
		q.nextDispatchR = q.head.arrivalR
	}
}

// totalWork is the request's cost in seat-seconds as dispatch estimates it.
func (r *qsRequest) totalWork() float64 {
	return float64(r.work.InitialSeats)*estimatedServiceDuration.Seconds() +
		float64(r.work.FinalSeats)*r.work.AdditionalLatency.Seconds()
}

// finish ends a request's execution. Its final seats, if any, stay in use
// for its additional latency (the work its watch fan-out causes), then
// are released. It is safe to call more than once.
func (r *qsRequest) finish() {
	qs := r.qs
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if r.state != stateExecuting {
		return
	}
	now := qs.syncTimeLocked()
	if q := r.queue; q != nil {
		// Charge the actual service time instead of G.
		q.nextDispatchR -= float64(r.work.InitialSeats) * (estimatedServiceDuration - now.Sub(r.start)).Seconds()
		qs.boundNextDispatchLocked(q)
	}
	if r.work.FinalSeats > 0 && r.work.AdditionalLatency > 0 {
		r.state = stateFinishing
		time.AfterFunc(r.work.AdditionalLatency, r.release)
		return
	}
	qs.releaseLocked(r, now)
}

func (r *qsRequest) release() {
	qs := r.qs
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if r.state != stateFinishing {
		return
	}
	qs.releaseLocked(r, qs.syncTimeLocked())
}

func (qs *queueSet) releaseLocked(r *qsRequest, now time.Time) {
	seats := r.work.MaxSeats()
	r.state = stateDone
	qs.requestsExecuting--
	qs.seatsInUse -= seats
	if q := r.queue; q != nil {
		q.requestsExecuting--
		q.seatsInUse -= seats
	}
	qs.trimQueuesLocked()
	qs.dispatchAsMuchAsPossibleLocked()
	qs.noteDemandLocked(now)
}

func (q *queue) push(r *qsRequest) {
	r.prev, r.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = r
	} else {
		q.head = r
	}
	q.tail = r
	q.length++
	q.seatsWaiting += r.work.MaxSeats()
}

func (q *queue) remove(r *qsRequest) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		q.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		q.tail = r.prev
	}
	r.prev, r.next = nil, nil
	q.length--
	q.seatsWaiting -= r.work.MaxSeats()
}

// integrator keeps the time-weighted mean, deviation and maximum of a
// value since its last reset.
type integrator struct {
	start, last     time.Time
	x               float64
	sum, sumSq, max float64
}

func (g *integrator) reset(now time.Time, x float64) {
	*g = integrator{start: now, last: now, x: x, max: x}
}

func (g *integrator) set(now time.Time, x float64) {
	g.advance(now)
	g.x = x
	g.max = math.Max(g.max, x)
}

func (g *integrator) advance(now time.Time) {
	if dt := now.Sub(g.last).Seconds(); dt > 0 {
		g.sum += g.x * dt
		g.sumSq += g.x * g.x * dt
		g.last = now
	}
}

// results returns the mean, deviation and maximum since the last reset,
// and starts a new interval.
func (g *integrator) results(now time.Time) (avg, dev, max float64) {
	g.advance(now)
	if dt := now.Sub(g.start).Seconds(); dt > 0 {
		avg = g.sum / dt
		dev = math.Sqrt(math.Max(0, g.sumSq/dt-avg*avg))
	} else {
		avg = g.x
	}
	max = g.max
	g.reset(now, g.x)
	return avg, dev, max
}
