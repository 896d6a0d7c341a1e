package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/textproto"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/request"
)

// DefaultBorrowingAdjustmentPeriod is how often priority levels' current
// concurrency limits are recomputed from their seat demand, as
// kube-apiserver does.
const DefaultBorrowingAdjustmentPeriod = 10 * time.Second

// seatDemandSmoothing is how slowly a level's smoothed seat demand decays.
const seatDemandSmoothing = 0.977

// APFConfig configures API Priority and Fairness.
type APFConfig struct {
	// ServerConcurrencyLimit is the seats the priority levels share: the
	// sum of --max-requests-inflight and --max-mutating-requests-inflight.
	ServerConcurrencyLimit int
	// RequestWaitLimit bounds a request's time in a queue (default 15s).
	RequestWaitLimit time.Duration
	// Estimator tunes work estimation.
	Estimator EstimatorConfig
	// BorrowingAdjustmentPeriod (default 10s) is how often levels lend
	// and borrow seats.
	BorrowingAdjustmentPeriod time.Duration
	// Clock is the time source; nil is time.Now.
	Clock func() time.Time
}

// APF is API Priority and Fairness, kube-apiserver's flow-control policy:
// FlowSchemas classify each request into a priority level and a flow;
// each level has a share of the server's concurrency, measured in seats,
// lends what it does not use and borrows what others do not; within a
// level, fair queuing (shuffle sharding and virtual-time scheduling) keeps
// one flow from starving the others. A request's cost in seats is
// estimated from what it asks (a large list costs more, see
// EstimatorConfig).
//
// An APF starts with the default configuration; Apply replaces it, live.
type APF struct {
	cfg   APFConfig
	clock func() time.Time

	// mu serializes Apply and the borrowing adjustment; state is read
	// without it.
	mu     sync.Mutex
	state  atomic.Pointer[apfState]
	levels map[string]*priorityLevel

	nextAdjust atomic.Int64 // unix nanoseconds

	countsMu sync.RWMutex
	counts   map[meta.GroupResource]int64

	watchMu sync.Mutex
	watches map[watchKey]int
}

type watchKey struct{ group, resource, namespace string }

// apfState is one configuration, immutable once published.
type apfState struct {
	schemas []*schemaState // in matching order, dangling ones left out
	// catchAll classifies what no schema matches (never, with the
	// mandatory configuration in place).
	catchAll *schemaState
	levels   []*priorityLevel // by name
	// objects applied, for status and the debug dump.
	flowSchemas []*FlowSchema
}

type schemaState struct {
	fs        *FlowSchema
	level     *priorityLevel
	uidHeader []string
}

// priorityLevel is a level's live state; it outlives configurations that
// keep its name.
type priorityLevel struct {
	name      string
	pl        *PriorityLevelConfiguration
	uidHeader []string
	exempt    bool
	qs        *queueSet

	nominalCL, minCL, maxCL, currentCL int
	maxSeats                           int
	smoothedDemand                     float64
}

var (
	headerFlowSchemaUID    = textproto.CanonicalMIMEHeaderKey(ResponseHeaderFlowSchemaUID)
	headerPriorityLevelUID = textproto.CanonicalMIMEHeaderKey(ResponseHeaderPriorityLevelUID)
)

// NewAPF returns an APF with kube-apiserver's default configuration.
func NewAPF(cfg APFConfig) (*APF, error) {
	if cfg.ServerConcurrencyLimit <= 0 {
		return nil, fmt.Errorf("flowcontrol: the server concurrency limit must be positive, not %d", cfg.ServerConcurrencyLimit)
	}
	if cfg.RequestWaitLimit <= 0 {
		cfg.RequestWaitLimit = 15 * time.Second
	}
	if cfg.BorrowingAdjustmentPeriod <= 0 {
		cfg.BorrowingAdjustmentPeriod = DefaultBorrowingAdjustmentPeriod
	}
	cfg.Estimator = cfg.Estimator.withDefaults()
	a := &APF{cfg: cfg, clock: cfg.Clock, levels: map[string]*priorityLevel{},
		counts: map[meta.GroupResource]int64{}, watches: map[watchKey]int{}}
	if a.clock == nil {
		a.clock = time.Now
	}
	if err := a.Apply(DefaultConfiguration()); err != nil {
		return nil, err
	}
	return a, nil
}

// Apply makes schemas and levels the configuration, at once: new requests
// are classified by it, changed levels take their new shape (requests
// already queued stay queued), removed levels finish what they hold. The
// mandatory objects (exempt and catch-all) are assumed as built in when
// missing, as kube-apiserver does; schemas naming a missing level are
// dangling and ignored. Apply does not modify its arguments.
func (a *APF) Apply(schemas []*FlowSchema, levels []*PriorityLevelConfiguration) error {
	a.mu.Lock()
	defer a.mu.Unlock()

	plByName := map[string]*PriorityLevelConfiguration{}
	for _, pl := range levels {
		c := clonePriorityLevel(pl)
		SetPriorityLevelDefaults(c)
		if errs := ValidatePriorityLevel(c); len(errs) > 0 {
			return fmt.Errorf("flowcontrol: priority level %q: %w", c.Name, errs)
		}
		plByName[c.Name] = c
	}
	for _, pl := range MandatoryPriorityLevels() {
		if _, ok := plByName[pl.Name]; !ok {
			plByName[pl.Name] = pl
		}
	}
	fsByName := map[string]*FlowSchema{}
	for _, fs := range schemas {
		c := cloneFlowSchema(fs)
		SetFlowSchemaDefaults(c)
		if errs := ValidateFlowSchema(c); len(errs) > 0 {
			return fmt.Errorf("flowcontrol: flow schema %q: %w", c.Name, errs)
		}
		fsByName[c.Name] = c
	}
	for _, fs := range MandatoryFlowSchemas() {
		if _, ok := fsByName[fs.Name]; !ok {
			fsByName[fs.Name] = fs
		}
	}

	// Nominal limits: each level's share of the server's seats.
	var shareSum float64
	for _, pl := range plByName {
		shareSum += float64(nominalShares(pl))
	}
	names := make([]string, 0, len(plByName))
	for n := range plByName {
		names = append(names, n)
	}
	sort.Strings(names)
	newLevels := make(map[string]*priorityLevel, len(plByName))
	ordered := make([]*priorityLevel, 0, len(names))
	for _, n := range names {
		pl := plByName[n]
		// A level is immutable once published, but for what the
		// borrowing adjustment changes under a.mu: a new configuration
		// makes a new one, which keeps the old one's queues.
		lvl := &priorityLevel{name: n, pl: pl, uidHeader: []string{pl.UID}, exempt: pl.Spec.Type == PriorityLevelEnablementExempt}
		if prev := a.levels[n]; prev != nil {
			lvl.qs, lvl.smoothedDemand = prev.qs, prev.smoothedDemand
		}
		if shareSum > 0 {
			lvl.nominalCL = int(math.Ceil(float64(a.cfg.ServerConcurrencyLimit) * float64(nominalShares(pl)) / shareSum))
		}
		lendable := int(math.Round(float64(lvl.nominalCL) * float64(lendablePercent(pl)) / 100))
		lvl.minCL = lvl.nominalCL - lendable
		lvl.maxCL = lvl.nominalCL + a.cfg.ServerConcurrencyLimit
		if l := pl.Spec.Limited; l != nil && l.BorrowingLimitPercent != nil {
			lvl.maxCL = lvl.nominalCL + int(math.Round(float64(lvl.nominalCL)*float64(*l.BorrowingLimitPercent)/100))
		}
		lvl.currentCL = lvl.nominalCL
		lvl.maxSeats = max(1, min(a.cfg.Estimator.MaximumSeats, lvl.nominalCL))
		qc := queueSetConfig{exempt: lvl.exempt, concurrencyLimit: lvl.currentCL}
		if l := pl.Spec.Limited; l != nil && l.LimitResponse.Type == LimitResponseTypeQueue && l.LimitResponse.Queuing != nil {
			q := l.LimitResponse.Queuing
			qc.queues, qc.handSize, qc.queueLengthLimit = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
		}
		if lvl.qs == nil {
			qs, err := newQueueSet(n, qc, a.clock)
			if err != nil {
				return fmt.Errorf("flowcontrol: priority level %q: %w", n, err)
			}
			lvl.qs = qs
		} else if err := lvl.qs.setConfig(qc); err != nil {
			return fmt.Errorf("flowcontrol: priority level %q: %w", n, err)
		}
		newLevels[n] = lvl
		ordered = append(ordered, lvl)
	}

	st := &apfState{levels: ordered}
	for _, fs := range fsByName {
		st.flowSchemas = append(st.flowSchemas, fs)
		lvl := newLevels[fs.Spec.PriorityLevelConfiguration.Name]
		if lvl == nil {
			continue // dangling
		}
		ss := &schemaState{fs: fs, level: lvl, uidHeader: []string{fs.UID}}
		st.schemas = append(st.schemas, ss)
		if fs.Name == FlowSchemaCatchAll {
			st.catchAll = ss
		}
	}
	sort.Slice(st.schemas, func(i, j int) bool {
		a, b := st.schemas[i].fs, st.schemas[j].fs
		if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
			return a.Spec.MatchingPrecedence < b.Spec.MatchingPrecedence
		}
		return a.Name < b.Name
	})
	sort.Slice(st.flowSchemas, func(i, j int) bool { return st.flowSchemas[i].Name < st.flowSchemas[j].Name })
	if st.catchAll == nil {
		// The catch-all schema points at a level that is gone: send
		// what nothing matches to the catch-all level.
		fs := MandatoryFlowSchemas()[1]
		st.catchAll = &schemaState{fs: fs, level: newLevels[PriorityLevelCatchAll], uidHeader: []string{""}}
	}
	a.levels = newLevels
	a.state.Store(st)
	a.nextAdjust.Store(a.clock().Add(a.cfg.BorrowingAdjustmentPeriod).UnixNano())
	return nil
}

func nominalShares(pl *PriorityLevelConfiguration) int32 {
	switch {
	case pl.Spec.Limited != nil && pl.Spec.Limited.NominalConcurrencyShares != nil:
		return *pl.Spec.Limited.NominalConcurrencyShares
	case pl.Spec.Exempt != nil && pl.Spec.Exempt.NominalConcurrencyShares != nil:
		return *pl.Spec.Exempt.NominalConcurrencyShares
	}
	return 0
}

func lendablePercent(pl *PriorityLevelConfiguration) int32 {
	switch {
	case pl.Spec.Limited != nil && pl.Spec.Limited.LendablePercent != nil:
		return *pl.Spec.Limited.LendablePercent
	case pl.Spec.Exempt != nil && pl.Spec.Exempt.LendablePercent != nil:
		return *pl.Spec.Exempt.LendablePercent
	}
	return 0
}

// classify returns the schema a request matches.
func (st *apfState) classify(u *authn.User, info *request.Info) *schemaState {
	for _, s := range st.schemas {
		if Matches(s.fs, u, info) {
			return s
		}
	}
	return st.catchAll
}

// Classify returns the names of the flow schema and priority level a
// request by u would be classified into.
func (a *APF) Classify(u *authn.User, info *request.Info) (flowSchema, priorityLevel string) {
	s := a.state.Load().classify(u, info)
	return s.fs.Name, s.level.name
}

var anonymous = &authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}

// Admit implements Interface.
func (a *APF) Admit(w http.ResponseWriter, r *http.Request) (func(), error) {
	ctx := r.Context()
	info, ok := request.InfoFrom(ctx)
	if !ok {
		return nil, meta.NewInternalError(errors.New("no request info in the context"))
	}
	u, ok := authn.UserFrom(ctx)
	if !ok {
		u = anonymous
	}
	a.maybeAdjust()
	st := a.state.Load()
	s := st.classify(u, info)
	lvl := s.level
	h := w.Header()
	h[headerFlowSchemaUID] = s.uidHeader
	h[headerPriorityLevelUID] = lvl.uidHeader
	if l := request.LogValuesFrom(ctx); l != nil {
		l.Add("apf_pl", lvl.name, "apf_fs", s.fs.Name)
	}

	if info.Verb == "watch" && info.IsResourceRequest {
		a.trackWatch(ctx, info)
	}
	var work WorkEstimate
	if lvl.exempt {
		work = WorkEstimate{InitialSeats: 1}
	} else {
		work = a.cfg.Estimator.estimate(info, r.URL.RawQuery, a, lvl.maxSeats)
	}
	d := distinguisher(s.fs.Spec.DistinguisherMethod, u, info)
	m := metrics.From(ctx)
	mr := m.FlowControlArrived(lvl.name, s.fs.Name, info.Verb == "watch")
	req, reason := lvl.qs.start(ctx, flowID{flowHash(s.fs.Name, d), s.fs.Name, d}, work, a.cfg.RequestWaitLimit)
	if req == nil {
		mr.Rejected(reason)
		return nil, meta.NewTooManyRequests(tooManyRequestsMessage, 1)
	}
	if m == nil {
		return req.finish, nil
	}
	mr.Dispatched(work.MaxSeats())
	return func() {
		req.finish()
		mr.Finished()
	}, nil
}

// SeatLimits implements metrics.SeatLimiter: every priority level's
// nominal, lower, upper and current seat limits.
func (a *APF) SeatLimits() []metrics.SeatLimits {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]metrics.SeatLimits, 0, len(a.levels))
	for _, lvl := range a.state.Load().levels {
		out = append(out, metrics.SeatLimits{PriorityLevel: lvl.name,
			Nominal: lvl.nominalCL, Lower: lvl.minCL, Upper: lvl.maxCL, Current: lvl.currentCL})
	}
	return out
}

// SetObjectCount records how many objects of a resource are stored, for
// the work estimates of lists. The server's wiring keeps it current.
func (a *APF) SetObjectCount(gr meta.GroupResource, n int64) {
	a.countsMu.Lock()
	a.counts[gr] = n
	a.countsMu.Unlock()
}

// ObjectCount returns the count SetObjectCount last recorded for gr.
func (a *APF) ObjectCount(gr meta.GroupResource) (int64, bool) {
	a.countsMu.RLock()
	n, ok := a.counts[gr]
	a.countsMu.RUnlock()
	return n, ok
}

func (a *APF) objectCount(info *request.Info) (int64, bool) {
	a.countsMu.RLock()
	n, ok := a.counts[meta.GroupResource{Group: info.APIGroup, Resource: info.Resource}]
	a.countsMu.RUnlock()
	return n, ok
}

// trackWatch counts a watch until its request ends.
func (a *APF) trackWatch(ctx context.Context, info *request.Info) {
	k := watchKey{info.APIGroup, info.Resource, info.Namespace}
	a.watchMu.Lock()
	a.watches[k]++
	a.watchMu.Unlock()
	context.AfterFunc(ctx, func() {
		a.watchMu.Lock()
		if a.watches[k]--; a.watches[k] <= 0 {
			delete(a.watches, k)
		}
		a.watchMu.Unlock()
	})
}

// interestedWatches counts the watches a write's event reaches: those on
// the resource in every namespace and those in its namespace.
func (a *APF) interestedWatches(info *request.Info) int {
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	n := a.watches[watchKey{info.APIGroup, info.Resource, ""}]
	if info.Namespace != "" {
		n += a.watches[watchKey{info.APIGroup, info.Resource, info.Namespace}]
	}
	return n
}

// maybeAdjust runs the borrowing adjustment when it is due.
func (a *APF) maybeAdjust() {
	next := a.nextAdjust.Load()
	now := a.clock()
	if now.UnixNano() < next || !a.nextAdjust.CompareAndSwap(next, now.Add(a.cfg.BorrowingAdjustmentPeriod).UnixNano()) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.adjustLocked(now)
}

// AdjustBorrowing recomputes every level's current concurrency limit from
// its recent seat demand now, instead of at the next period.
func (a *APF) AdjustBorrowing() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock()
	a.nextAdjust.Store(now.Add(a.cfg.BorrowingAdjustmentPeriod).UnixNano())
	a.adjustLocked(now)
}

// adjustLocked is kube-apiserver's borrowing: each level's target is its
// smoothed seat demand (mean plus deviation over the period, decaying
// slowly), kept between what it may not lend and what it may borrow; the
// server's seats are then shared in proportion to the targets.
func (a *APF) adjustLocked(now time.Time) {
	st := a.state.Load()
	items := make([]allocItem, len(st.levels))
	sum := 0
	for i, lvl := range st.levels {
		lvl.qs.mu.Lock()
		lvl.qs.syncTimeLocked()
		avg, dev, hw := lvl.qs.demand.results(now)
		lvl.qs.mu.Unlock()
		envelope := avg + dev
		lvl.smoothedDemand = math.Max(envelope, seatDemandSmoothing*lvl.smoothedDemand+(1-seatDemandSmoothing)*envelope)
		lower := float64(lvl.minCL)
		upper := float64(lvl.maxCL)
		if lvl.exempt {
			lower = math.Max(lower, math.Round(hw))
			upper = math.Max(lower, float64(lvl.nominalCL))
		}
		items[i] = allocItem{lower: lower, upper: upper, target: math.Max(lower, lvl.smoothedDemand)}
		sum += lvl.nominalCL
	}
	allocs := allocate(float64(sum), items)
	for i, lvl := range st.levels {
		lvl.currentCL = int(math.Round(allocs[i]))
		if !lvl.exempt {
			lvl.qs.setConcurrencyLimit(lvl.currentCL)
		}
	}
}

type allocItem struct{ lower, upper, target float64 }

// allocate shares total among items: each gets target*p clamped to its
// bounds, with p chosen so that the shares add up to total (or every item
// is at a bound).
func allocate(total float64, items []allocItem) []float64 {
	out := make([]float64, len(items))
	at := func(p float64) float64 {
		var s float64
		for i, it := range items {
			out[i] = math.Min(it.upper, math.Max(it.lower, it.target*p))
			s += out[i]
		}
		return s
	}
	if at(0) >= total {
		return out
	}
	hi := 1.0
	for at(hi) < total && hi < 1e12 {
		hi *= 2
	}
	if at(hi) < total {
		return out
	}
	lo := 0.0
	for range 100 {
		mid := (lo + hi) / 2
		if at(mid) < total {
			lo = mid
		} else {
			hi = mid
		}
	}
	at(hi)
	return out
}

func cloneFlowSchema(fs *FlowSchema) *FlowSchema {
	c := *fs
	c.Spec.Rules = append([]PolicyRulesWithSubjects(nil), fs.Spec.Rules...)
	if fs.Spec.DistinguisherMethod != nil {
		dm := *fs.Spec.DistinguisherMethod
		c.Spec.DistinguisherMethod = &dm
	}
	return &c
}

func clonePriorityLevel(pl *PriorityLevelConfiguration) *PriorityLevelConfiguration {
	c := *pl
	if l := pl.Spec.Limited; l != nil {
		lc := *l
		if q := l.LimitResponse.Queuing; q != nil {
			qc := *q
			lc.LimitResponse.Queuing = &qc
		}
		c.Spec.Limited = &lc
	}
	if e := pl.Spec.Exempt; e != nil {
		ec := *e
		c.Spec.Exempt = &ec
	}
	return &c
}
