package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
)

// serverSpec says how to run one of the two servers.
type serverSpec struct {
	key    string // apikit or sample: the column of the report
	title  string
	bin    string
	prefix string // its etcd key prefix, which no other server uses
	// args are its command line for a port, the PKI files, etcd's URL and
	// a scratch directory.
	args func(port int, pki pkiFiles, etcd, dir string) []string
}

// wardleSpec is apikit's examples/wardle: kube-apiserver's flags.
func wardleSpec(bin string, extra []string) serverSpec {
	return serverSpec{
		key: "apikit", title: "apikit examples/wardle", bin: bin, prefix: "/bench/apikit",
		args: func(port int, pki pkiFiles, etcd, dir string) []string {
			return append([]string{
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(port),
				"--data-dir=" + filepath.Join(dir, "wardle"),
				"--etcd-servers=" + etcd,
				"--etcd-prefix=/bench/apikit",
				"--tls-cert-file=" + pki.servingCert,
				"--tls-private-key-file=" + pki.servingKey,
				"--client-ca-file=" + pki.caCert,
			}, extra...)
		},
	}
}

// sampleSpec is k8s.io/sample-apiserver as bench/sampleapiserver builds
// it.
func sampleSpec(bin string, extra []string) serverSpec {
	return serverSpec{
		key: "sample", title: "k8s.io/sample-apiserver " + sampleVersion, bin: bin, prefix: "/bench/sample",
		args: func(port int, pki pkiFiles, etcd, dir string) []string {
			return append([]string{
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(port),
				"--cert-dir=" + filepath.Join(dir, "sample-certs"),
				"--etcd-servers=" + etcd,
				"--etcd-prefix=/bench/sample",
				"--tls-cert-file=" + pki.servingCert,
				"--tls-private-key-file=" + pki.servingKey,
				"--client-ca-file=" + pki.caCert,
			}, extra...)
		},
	}
}

// params are the load's sizes.
type params struct {
	n, workers, lists, pageSize, watchEvents int
	settle                                   time.Duration
	// identity makes every request ask for uncompressed responses
	// (Accept-Encoding: identity) instead of gzip: the LIST figures of
	// both servers without their compressors, like for like.
	identity bool
}

// phase is the measure of one batch of requests.
type phase struct {
	ops  int
	wall time.Duration
	cpu  time.Duration // the server's user + system CPU time
	// etcdCPU and clientCPU are etcd's and the load generator's, to show
	// what else the machine spent on the operations.
	etcdCPU, clientCPU time.Duration
}

func (p phase) throughput() float64 { return float64(p.ops) / p.wall.Seconds() }

// cpuPerOp is the server's CPU time per operation, in milliseconds.
func (p phase) cpuPerOp() float64 { return perOpMS(p.cpu, p.ops) }

// perOpMS is d per operation in milliseconds.
func perOpMS(d time.Duration, ops int) float64 { return d.Seconds() * 1000 / float64(ops) }

// listPhase is the measure of repeated LISTs.
type listPhase struct {
	walls []time.Duration // one per LIST (all its pages, when paged)
	cpu   time.Duration   // the server's CPU time for all of them
	bytes int             // one LIST's response size, all pages
	wire  int             // the same on the wire (gzipped when the server did)
	pages int
}

// wallMS is the median LIST's wall time in milliseconds.
func (l listPhase) wallMS() float64 {
	ms := make([]float64, len(l.walls))
	for i, w := range l.walls {
		ms[i] = w.Seconds() * 1000
	}
	return median(ms)
}

// cpuMS is the server's CPU time per LIST in milliseconds.
func (l listPhase) cpuMS() float64 { return l.cpu.Seconds() * 1000 / float64(len(l.walls)) }

// serverRun is what one start of one server measured.
type serverRun struct {
	ready              time.Duration
	idleRSS, loadedRSS int64
	// idleAnon and idleFile split idleRSS: the process's own memory
	// (RssAnon) and the pages of its binary and other files (RssFile).
	idleAnon, idleFile          int64
	create, get, update, delete *phase
	// apply is the server-side apply phase: a PATCH of one spec field of
	// each Flunder.
	apply       *phase
	list, paged *listPhase
	watch       []time.Duration
	valueSize   int
	errs        []string
	// setup is how long the objects' setup took, if any
	// (objectType.setup).
	setup setupTimes
	// floorBodies are its responses for the transport floor, if asked.
	floorBodies *floorBodies
}

// runner runs the phases against a server.
type runner struct {
	p       params
	etcd    *etcdServer
	pki     pkiFiles
	tlsConf *tls.Config
	dir     string
	// profileDir, if set, gets a CPU profile of profileSeconds of each
	// server's first run (the core and CRD modes' -profile).
	profileDir     string
	profileSeconds int
	// profilePhase, if set (-profile-phase), moves that profile to one
	// phase: the phase's requests repeat, unmeasured, for the profile's
	// length before the phase is measured.
	profilePhase string
	// captureFloor keeps a GET's and a full LIST's responses of each
	// server (serverRun.floorBodies) for the transport floor.
	captureFloor bool
}

// Phases -profile-phase can profile alone.
const (
	phaseGet   = "get"
	phaseList  = "list"
	phasePaged = "paged"
)

// profileOnly profiles, with -profile-phase name on the first run, the
// server while round repeats: round is one pass of the phase's requests
// (the measured phase runs after, as in any run). It does nothing
// otherwise.
func (r *runner) profileOnly(ctx context.Context, l *live, spec serverSpec, runNo int, name string, round func(ctx context.Context) error) {
	if r.profileDir == "" || r.profilePhase != name || runNo != 0 {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := profile(ctx, l.c, r.profileSeconds, filepath.Join(r.profileDir, spec.key+".pprof"))
	for {
		select {
		case err := <-done:
			if err != nil {
				l.fail(runNo, "profile", err)
			}
			return
		default:
		}
		if err := round(ctx); err != nil {
			l.fail(runNo, "profile "+name, err)
			return // cancel ends the profile's request
		}
	}
}

// profileRun starts, on the first run with -profile, a CPU profile of the
// server from now on; the function it returns waits for the profile,
// before the server stops (defer it after the server's stop).
func (r *runner) profileRun(ctx context.Context, l *live, spec serverSpec, runNo int) func() {
	if r.profileDir == "" || runNo != 0 {
		return func() {}
	}
	done := profile(ctx, l.c, r.profileSeconds, filepath.Join(r.profileDir, spec.key+".pprof"))
	return func() {
		if err := <-done; err != nil {
			l.fail(runNo, "profile", err)
		}
	}
}

// heapProfile writes, on the first run with -profile, heap profiles of
// the server with the objects (right after their RSS is read): where the
// memory the RSS figure counts goes. <key>-heap.pprof is for go tool
// pprof; <key>-heap.txt is the text form, which ends with the runtime's
// MemStats (HeapAlloc, HeapSys, HeapReleased: how the RSS splits into live
// heap, heap the runtime keeps, and heap returned to the kernel). The
// server collects garbage first (?gc=1), so they show the live heap.
func (r *runner) heapProfile(ctx context.Context, l *live, spec serverSpec, runNo int) {
	if r.profileDir == "" || runNo != 0 {
		return
	}
	path := filepath.Join(r.profileDir, spec.key+"-heap")
	for _, f := range []struct{ query, file string }{{"?gc=1", path + ".pprof"}, {"?debug=1", path + ".txt"}} {
		var buf bytes.Buffer
		_, err := l.c.send(ctx, http.MethodGet, "/debug/pprof/heap"+f.query, "", nil, http.StatusOK, &buf)
		if err == nil {
			err = os.WriteFile(f.file, buf.Bytes(), 0o644)
		}
		if err != nil {
			l.fail(runNo, "heap profile", err)
			return
		}
	}
	logger.Printf("heap profile: %s.pprof (go tool pprof -sample_index=inuse_space -top %s.pprof), MemStats at the end of %s.txt", path, path, path)
}

// live is a server a run started: its process, the load generator's
// client, and what it measured at the start.
type live struct {
	proc *process
	c    *apiClient
	res  *serverRun
}

// stop stops the server and drops the client's connections.
func (l *live) stop() {
	l.c.close()
	if err := l.proc.stop(30 * time.Second); err != nil {
		logger.Printf("%s: %v", l.proc.name, err)
	}
}

// fail records a failed phase in the result.
func (l *live) fail(runNo int, what string, err error) {
	l.res.errs = append(l.res.errs, fmt.Sprintf("%s: %v", what, err))
	logger.Printf("%s run %d: %s: %v", l.proc.name, runNo, what, err)
}

// start starts spec's server on an empty etcd prefix, waits until it is
// ready, lets it settle, and reads its idle memory. The caller stops it.
func (r *runner) start(ctx context.Context, spec serverSpec, runNo int) (*live, error) {
	if err := r.etcd.wipe(ctx, spec.prefix+"/"); err != nil {
		return nil, err
	}
	ports, err := etcdtest.FreePorts(1)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.dir, fmt.Sprintf("%s-%d", spec.key, runNo))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making %s: %w", dir, err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	if err := r.pki.writeKubeconfig(filepath.Join(dir, "kubeconfig"), url); err != nil {
		return nil, err
	}
	c := newAPIClient(url, r.tlsConf)
	c.identity = r.p.identity
	started := time.Now()
	proc, err := startProcess(spec.key, spec.bin, spec.args(ports[0], r.pki, r.etcd.endpoint, dir), filepath.Join(dir, "server.log"))
	if err != nil {
		c.close()
		return nil, err
	}
	l := &live{proc: proc, c: c, res: &serverRun{}}
	if err := l.measureStart(ctx, started, r.p.settle); err != nil {
		l.stop()
		return nil, err
	}
	return l, nil
}

// measureStart waits for readiness, then settle, and reads the idle RSS.
func (l *live) measureStart(ctx context.Context, started time.Time, settle time.Duration) error {
	res, pid := l.res, l.proc.pid()
	var err error
	if res.ready, err = waitReady(ctx, l.c, l.proc, started); err != nil {
		return err
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	if res.idleRSS, err = rss(pid); err != nil {
		return err
	}
	if res.idleAnon, err = statusKB(pid, "RssAnon"); err != nil {
		return err
	}
	res.idleFile, err = statusKB(pid, "RssFile")
	return err
}

// run is runObjects with the Flunders.
func (r *runner) run(ctx context.Context, spec serverSpec, runNo int) (*serverRun, error) {
	return r.runObjects(ctx, spec, runNo, flunders)
}

// runObjects starts spec's server on an empty etcd prefix, measures
// everything on it with objects of t, and stops it. A failed phase is
// recorded in the result, and the phases that need its objects are
// skipped.
func (r *runner) runObjects(ctx context.Context, spec serverSpec, runNo int, t objectType) (*serverRun, error) {
	l, err := r.start(ctx, spec, runNo)
	if err != nil {
		return nil, err
	}
	defer l.stop()
	c, res, pid := l.c, l.res, l.proc.pid()
	fail := func(what string, err error) { l.fail(runNo, what, err) }
	if t.setup != nil {
		if res.setup, err = t.setup(ctx, c); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.key, err)
		}
	}
	if r.profilePhase == "" {
		defer r.profileRun(ctx, l, spec, runNo)()
	}
	// One request sets up the HTTP/2 connection the phases share.
	var buf bytes.Buffer
	if err := c.do(ctx, http.MethodGet, t.collection+"?limit=1", nil, http.StatusOK, &buf); err != nil {
		return nil, fmt.Errorf("%s: first LIST: %w", spec.key, err)
	}

	n, w := r.p.n, r.p.workers
	bufs := make([]bytes.Buffer, w)
	rvs := make([]string, n)
	names := make([]string, n)
	creates := make([][]byte, n)
	for i := range n {
		names[i] = flunderName(i)
		creates[i] = t.createBody(names[i], i)
	}

	res.create, err = r.measure(ctx, pid, n, w, func(ctx context.Context, wk, i int) error {
		b := &bufs[wk]
		if err := c.do(ctx, http.MethodPost, t.collection, creates[i], http.StatusCreated, b); err != nil {
			return err
		}
		var m objectMeta
		if err := json.Unmarshal(b.Bytes(), &m); err != nil {
			return fmt.Errorf("create %s: decoding the response: %w", names[i], err)
		}
		rvs[i] = m.Metadata.ResourceVersion
		return nil
	})
	if err != nil {
		fail("create", err)
		return res, nil
	}
	// An object's key, not the first key under the prefix: apikit stores
	// its RBAC and flow-control objects there too.
	if res.valueSize, err = r.etcd.valueSize(ctx, spec.prefix+t.stored); err != nil {
		fail("stored size", err)
	}

	get := func(ctx context.Context, wk, i int) error {
		return c.do(ctx, http.MethodGet, t.collection+"/"+names[i], nil, http.StatusOK, &bufs[wk])
	}
	r.profileOnly(ctx, l, spec, runNo, phaseGet, func(ctx context.Context) error {
		_, err := forEach(ctx, n, w, get)
		return err
	})
	if res.get, err = r.measure(ctx, pid, n, w, get); err != nil {
		fail("get", err)
	}

	for _, lp := range []struct {
		name  string
		limit int
		res   **listPhase
	}{{phaseList, 0, &res.list}, {phasePaged, r.p.pageSize, &res.paged}} {
		r.profileOnly(ctx, l, spec, runNo, lp.name, func(ctx context.Context) error {
			_, _, _, err := listAll(ctx, c, t.collection, lp.limit, &buf, nil)
			return err
		})
		if *lp.res, err = r.lists(ctx, c, pid, t.collection, lp.limit, n, countItems); err != nil {
			fail(lp.name+" list", err)
		}
	}
	if res.loadedRSS, err = rss(pid); err != nil {
		return nil, err
	}
	r.heapProfile(ctx, l, spec, runNo)
	if r.captureFloor {
		if fb, err := captureFloorBodies(ctx, c, t, names[0], r.p.pageSize); err != nil {
			fail("transport floor responses", err)
		} else {
			res.floorBodies = &fb
		}
	}

	if err := c.do(ctx, http.MethodGet, t.collection+"?limit=1", nil, http.StatusOK, &buf); err != nil {
		fail("watch", err)
	} else if rv, _, err := listMeta(buf.Bytes()); err != nil {
		fail("watch", err)
	} else if res.watch, err = c.watchLatency(ctx, t, rv, r.p.watchEvents); err != nil {
		fail("watch", err)
	}

	res.update, err = r.measure(ctx, pid, n, w, func(ctx context.Context, wk, i int) error {
		return c.do(ctx, http.MethodPut, t.collection+"/"+names[i], t.updateBody(names[i], i, rvs[i]), http.StatusOK, &bufs[wk])
	})
	if err != nil {
		fail("update", err)
	}
	res.apply, err = r.measure(ctx, pid, n, w, func(ctx context.Context, wk, i int) error {
		_, err := c.send(ctx, http.MethodPatch, t.applyPath(names[i]), applyType, t.applyBody(names[i], i), http.StatusOK, &bufs[wk])
		return err
	})
	if err != nil {
		fail("apply", err)
	} else if err := c.do(ctx, http.MethodGet, t.collection+"/"+names[n-1], nil, http.StatusOK, &buf); err != nil {
		fail("apply check", err)
	} else if err := checkApplied(buf.Bytes(), n-1); err != nil {
		res.apply = nil
		fail("apply check", err)
	}
	res.delete, err = r.measure(ctx, pid, n, w, func(ctx context.Context, wk, i int) error {
		return c.do(ctx, http.MethodDelete, t.collection+"/"+names[i], nil, http.StatusOK, &bufs[wk])
	})
	if err != nil {
		fail("delete", err)
	}
	return res, ctx.Err()
}

// waitReady polls /readyz every 10ms until it answers 200 and returns the
// time since started.
func waitReady(ctx context.Context, c *apiClient, proc *process, started time.Time) (time.Duration, error) {
	deadline := started.Add(3 * time.Minute)
	var buf bytes.Buffer
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.do(rctx, http.MethodGet, "/readyz", nil, http.StatusOK, &buf)
		cancel()
		if err == nil {
			return time.Since(started), nil
		}
		if proc.done() {
			return 0, fmt.Errorf("%s exited before it was ready:\n%s", proc.name, proc.tail(30))
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s not ready after 3 minutes (%v):\n%s", proc.name, err, proc.tail(30))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// measure runs n operations from w workers, and the CPU time they cost the
// server, etcd and the load generator.
func (r *runner) measure(ctx context.Context, pid, n, w int, op func(ctx context.Context, worker, i int) error) (*phase, error) {
	pids := []int{pid, r.etcd.proc.pid(), os.Getpid()}
	before, err := cpuTimes(pids)
	if err != nil {
		return nil, err
	}
	wall, err := forEach(ctx, n, w, op)
	if err != nil {
		return nil, err
	}
	after, err := cpuTimes(pids)
	if err != nil {
		return nil, err
	}
	return &phase{ops: n, wall: wall, cpu: after[0] - before[0], etcdCPU: after[1] - before[1], clientCPU: after[2] - before[2]}, nil
}

// cpuTimes is cpuTime of each process.
func cpuTimes(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		var err error
		if out[i], err = cpuTime(pid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lists LISTs the collection at path r.p.lists times, one after another,
// in pages of limit (0: whole). An untimed LIST first checks that count
// finds want of the benchmark's objects in its pages.
func (r *runner) lists(ctx context.Context, c *apiClient, pid int, path string, limit, want int, count func(page []byte) (int, error)) (*listPhase, error) {
	var buf bytes.Buffer
	items := 0
	if _, _, _, err := listAll(ctx, c, path, limit, &buf, func(page []byte) error {
		n, err := count(page)
		items += n
		return err
	}); err != nil {
		return nil, err
	}
	if items != want {
		return nil, fmt.Errorf("LIST %s (limit %d) returned %d of the benchmark's objects, want %d", path, limit, items, want)
	}
	res := &listPhase{}
	before, err := cpuTime(pid)
	if err != nil {
		return nil, err
	}
	for range r.p.lists {
		started := time.Now()
		size, wire, pages, err := listAll(ctx, c, path, limit, &buf, nil)
		if err != nil {
			return nil, err
		}
		res.walls = append(res.walls, time.Since(started))
		res.bytes, res.wire, res.pages = size, wire, pages
	}
	after, err := cpuTime(pid)
	if err != nil {
		return nil, err
	}
	res.cpu = after - before
	return res, nil
}

// listAll LISTs the collection at path in pages of limit (0: whole),
// following continue tokens, calls each (when not nil) on every page, and
// returns the size of all pages, decoded and on the wire, and their number.
func listAll(ctx context.Context, c *apiClient, collection string, limit int, buf *bytes.Buffer, each func(page []byte) error) (size, wire, pages int, err error) {
	cont := ""
	for {
		path := collection
		if limit > 0 {
			path += "?limit=" + strconv.Itoa(limit)
			if cont != "" {
				path += "&continue=" + url.QueryEscape(cont)
			}
		}
		w, err := c.send(ctx, http.MethodGet, path, jsonType, nil, http.StatusOK, buf)
		if err != nil {
			return size, wire, pages, err
		}
		size += buf.Len()
		wire += w
		pages++
		if each != nil {
			if err := each(buf.Bytes()); err != nil {
				return size, wire, pages, err
			}
		}
		if limit == 0 {
			return size, wire, pages, nil
		}
		if _, cont, err = listMeta(buf.Bytes()); err != nil {
			return size, wire, pages, err
		}
		if cont == "" {
			return size, wire, pages, nil
		}
	}
}
