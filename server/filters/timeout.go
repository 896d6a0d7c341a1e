package filters

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/respond"
)

// WithTimeout bounds every request that is not long-running (watches are
// exempt) to timeout, or to the shorter ?timeout= the client asks for. When
// time runs out the client gets a 504 Status if nothing was written yet; a
// response already under way is aborted. The handler's context is cancelled
// either way, so storage calls stop too.
func WithTimeout(h http.Handler, timeout time.Duration, longRunning func(*request.Info) bool) http.Handler {
	if timeout <= 0 {
		return h
	}
	pool := &workerPool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.InfoFrom(r.Context())
		if info != nil && longRunning(info) {
			h.ServeHTTP(w, r)
			return
		}
		d := timeout
		if q := request.Query(r).Get("timeout"); q != "" {
			qd, err := time.ParseDuration(q)
			if err != nil {
				// As kube-apiserver: a malformed timeout is the client's
				// mistake, not a request to be served without one.
				respond.Error(w, r, meta.NewBadRequest("invalid timeout specified in the request URL - "+err.Error()))
				return
			}
			// 0 (or less) means "no timeout of my own": the server's applies.
			if qd > 0 && qd < d {
				d = qd
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		c := timeoutCalls.Get().(*timeoutCall)
		// The writer is the request's own, never pooled: a handler that
		// breaks net/http's rule and writes after returning must not reach
		// a later request's response through it.
		c.tw = &timeoutWriter{w: w}
		c.h = h
		// The handler may outlive this filter (it is abandoned on
		// timeout), so it gets a request of its own whose header map is
		// its own: what it changes later (headers) must not race with
		// net/http, which reads the request after ServeHTTP returns.
		// The rest is shared: nothing below writes a request's URL or
		// other maps (r.Clone copied them too).
		c.r = r.WithContext(ctx)
		c.r.Header = r.Header.Clone()
		pool.run(c.serve)
		select {
		case p := <-c.done:
			if p != nil {
				panic(p)
			}
			c.release()
		case <-ctx.Done():
			// The handler keeps c (its writer, its done channel) for
			// as long as it runs: c never returns to the pool.
			if c.tw.timeout(func() {
				respond.Error(w, r, meta.NewTimeout("request did not complete within requested timeout - "+ctx.Err().Error(), 0))
			}) {
				return
			}
			// Headers are out: the only honest thing left is to abort.
			panic(http.ErrAbortHandler)
		}
	})
}

// timeoutCall is one request's hand-off to a worker, kept for the next
// request once its handler has returned: the done channel and the function
// the worker runs would otherwise be two allocations per request. The
// writer is not kept (see WithTimeout).
type timeoutCall struct {
	tw   *timeoutWriter
	h    http.Handler
	r    *http.Request
	done chan any // the handler's recover(); buffered, so an abandoned handler never blocks
	// serve is c.run, bound once.
	serve func()
}

var timeoutCalls = sync.Pool{New: func() any {
	c := &timeoutCall{done: make(chan any, 1)}
	c.serve = c.run
	return c
}}

// run serves the request on the worker and reports how the handler ended.
func (c *timeoutCall) run() {
	defer func() {
		c.done <- recover()
	}()
	c.h.ServeHTTP(c.tw, c.r)
}

// release returns c to the pool after its handler returned normally (a
// panicking handler's call is left to the collector: it may have handed
// its writer on).
func (c *timeoutCall) release() {
	c.tw.release()
	c.tw = nil
	c.h, c.r = nil, nil
	timeoutCalls.Put(c)
}

// maxIdleWorkers bounds the goroutines a workerPool keeps waiting, and
// workerIdleTime how long each waits before it ends.
const (
	maxIdleWorkers = 64
	workerIdleTime = 10 * time.Second
)

// workerPool runs the handlers the timeout filter may abandon, each in a
// goroutine of its own, reusing goroutines that finished one: a new
// goroutine starts with a small stack that a request grows two or three
// times (each growth copies it), which cost a GET ~7% of its CPU; a reused
// one has its stack grown already (the collector halves it when a goroutine
// uses a quarter of it). An abandoned handler keeps its goroutine until it
// returns, as a new goroutine would.
type workerPool struct {
	tasks chan func() // unbuffered: a send succeeds only when a worker waits
	once  sync.Once
	idle  atomic.Int32
}

// run runs f in a waiting worker, or in a new one when none waits.
func (p *workerPool) run(f func()) {
	p.once.Do(func() { p.tasks = make(chan func()) })
	select {
	case p.tasks <- f:
	default:
		go p.work(f)
	}
}

// work runs f, then the tasks it is given while fewer than maxIdleWorkers
// others wait, until none comes for workerIdleTime.
func (p *workerPool) work(f func()) {
	var idle *time.Timer
	for {
		f()
		if p.idle.Add(1) > maxIdleWorkers {
			p.idle.Add(-1)
			return
		}
		if idle == nil {
			idle = time.NewTimer(workerIdleTime)
		} else {
			idle.Reset(workerIdleTime)
		}
		select {
		case f = <-p.tasks:
			p.idle.Add(-1)
		case <-idle.C:
			p.idle.Add(-1)
			return
		}
	}
}

// timeoutWriter passes writes through until the request times out, then
// refuses them, so the abandoned handler cannot touch the real writer.
//
// The handler fills a header map of its own, copied into the real one when
// it writes its status: the real map is the one the 504 is written with,
// and net/http reads it when the status goes out, so a handler that went on
// setting headers (flow control's, say) after the timeout fired would race
// with both if it held the real map.
type timeoutWriter struct {
	w           http.ResponseWriter
	mu          sync.Mutex
	header      http.Header // the handler's; nil until it asks for it
	timedOut    bool
	wroteHeader bool
}

// timeout marks the writer timed out and, if the response is still
// untouched, writes it with write and reports true. It holds the lock
// while it writes, so the abandoned handler cannot interleave.
func (tw *timeoutWriter) timeout(write func()) bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.timedOut = true
	if tw.wroteHeader {
		return false
	}
	write()
	return true
}

// Header returns the handler's header map: a copy of what the filters
// outside set, written to the client with the status unless the request
// times out first.
func (tw *timeoutWriter) Header() http.Header {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.header == nil {
		tw.header, _ = headerMaps.Get().(http.Header)
		if tw.header == nil {
			tw.header = make(http.Header, 8)
		}
		for k, v := range tw.w.Header() {
			tw.header[k] = append([]string(nil), v...) // the 504 may write the original
		}
	}
	return tw.header
}

// headerMaps keeps the handlers' header maps of finished requests: a GET
// would otherwise allocate one per request.
var headerMaps sync.Pool

// release returns the handler's header map for reuse once the handler has
// returned (an abandoned one may still hold it, and keeps it). The values
// live on in the response's map; a new request's Set and Add make new ones.
func (tw *timeoutWriter) release() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.header != nil {
		clear(tw.header)
		headerMaps.Put(tw.header)
		tw.header = nil
	}
}

// commitHeader makes the handler's header map the response's, as the status
// goes out. The caller holds the lock and has checked the request is live.
func (tw *timeoutWriter) commitHeader() {
	tw.wroteHeader = true
	if tw.header == nil {
		return
	}
	real := tw.w.Header()
	clear(real)
	for k, v := range tw.header {
		real[k] = v
	}
}

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut || tw.wroteHeader {
		return
	}
	tw.commitHeader()
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(b []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if !tw.wroteHeader {
		tw.commitHeader()
	}
	return tw.w.Write(b)
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	f, ok := tw.w.(http.Flusher)
	if !ok || tw.timedOut {
		return
	}
	// A flush sends the status (200 unless written): headers go with it.
	if !tw.wroteHeader {
		tw.commitHeader()
	}
	f.Flush()
}
