// Command bench is apikit's side-by-side load benchmark: it runs apikit's
// examples/wardle and k8s.io/sample-apiserver against one etcd process with
// the same load, and reports each figure for both, their ratio and the
// target of issue 7. See docs/benchmarks.md for what it measures and the
// latest results.
//
//	cd bench && go run . -out ../docs/benchmarks.md -label "what changed"
//
// With -crd it runs one CRD's custom resources on bench/crdserver's
// extensions server beside k8s.io/apiextensions-apiserver instead (crd.go):
//
//	cd bench && go run . -crd -out ../docs/benchmarks.md -label "what changed"
//
// It is a module of its own, outside apikit's tests: ./test.sh never runs
// it. `go test ./...` here tests the harness's statistics and parsing
// only. The peer is built from bench/sampleapiserver, a module of its own
// too, so that Kubernetes' dependencies stay out of both.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == floorCommand {
		if err := floorServe(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	params
	runs                   int
	out, label, repo, work string
	keep, fsync            bool
	wardleArgs, sampleArgs string
	wardleBin              string
	apikitTags             string
	only                   string
	// core runs the core mode: ConfigMaps beside kube-apiserver.
	core     bool
	kubeArgs string
	profile  string
	profSecs int
	// floor measures the transport floor after each run (floor.go).
	floor     bool
	profPhase string
	// crd runs the CRD mode: custom resources beside the
	// apiextensions-apiserver.
	crd     bool
	extArgs string
}

func parseFlags() (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 5000, "Flunders to create, GET, LIST, update, apply and delete")
	fs.IntVar(&o.workers, "workers", 16, "concurrent workers for creates, GETs, updates, applies, deletes and raw etcd")
	fs.IntVar(&o.runs, "runs", 5, "runs; each figure is the median over them")
	fs.IntVar(&o.lists, "lists", 40, "full and paged LISTs per run (CPU is read in 10 ms ticks: 40 LISTs make it 0.25 ms per LIST)")
	fs.IntVar(&o.pageSize, "page", 500, "page size (limit) of the paged LIST")
	fs.IntVar(&o.watchEvents, "watch-events", 1000, "events of the watch latency phase")
	fs.BoolVar(&o.identity, "identity", false, "ask for responses uncompressed (Accept-Encoding: identity) rather than gzip, as Go's transport, client-go and kubectl do: the LIST figures without either server's compressor")
	fs.DurationVar(&o.settle, "settle", 3*time.Second, "idle time after ready before the idle RSS is read")
	fs.StringVar(&o.out, "out", "", "write the results to this Markdown file (docs/benchmarks.md), above the runs it already holds")
	fs.StringVar(&o.label, "label", "", "what this run is, for its heading (e.g. \"before the watch cache\")")
	fs.StringVar(&o.repo, "repo", "..", "apikit's repository root")
	fs.StringVar(&o.work, "work", "", "scratch directory (default: a new temporary one, removed afterwards)")
	fs.BoolVar(&o.floor, "floor", true, "measure the transport floor after each run: a minimal HTTPS server answering the GETs and full LISTs with apikit's responses from memory (floor.go)")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch directory (server and etcd logs)")
	fs.BoolVar(&o.fsync, "etcd-fsync", false, "run etcd with fsync (default: --unsafe-no-fsync, so that the servers, not the disk, are measured)")
	fs.StringVar(&o.wardleArgs, "wardle-args", "", "extra flags for wardle, space separated")
	fs.StringVar(&o.sampleArgs, "sample-args", "", "extra flags for the sample-apiserver, space separated")
	fs.StringVar(&o.wardleBin, "wardle-bin", "", "run this wardle binary instead of building examples/wardle (one built with a CPU profile, say); its size and modules are reported as apikit's")
	fs.StringVar(&o.apikitTags, "apikit-tags", noEmbedTag, "build tags of apikit's servers; the default leaves the embedded etcd out, since the servers store in the benchmark's etcd, as the peer does (\"\" builds the default build, with it)")
	fs.StringVar(&o.only, "only", "", "run one server only (apikit, sample or, with -core, kube, with -crd, apiextensions), for trying things; ratios are then n/a")
	fs.BoolVar(&o.core, "core", false, "the core mode: ConfigMaps on examples/wardle --core-api beside kube-apiserver "+kubeVersion+" (builds it from tools/kube-apiserver, ~20 minutes cold) instead of Flunders beside the sample-apiserver")
	fs.StringVar(&o.kubeArgs, "kube-args", "", "extra flags for kube-apiserver (-core), space separated")
	fs.BoolVar(&o.crd, "crd", false, "the CRD mode: custom resources on bench/crdserver (the extensions server alone) beside k8s.io/apiextensions-apiserver "+apiextensionsVersion+" (builds it from bench/apiextensionsapiserver, ~15 minutes cold) instead of Flunders beside the sample-apiserver")
	fs.StringVar(&o.extArgs, "apiextensions-args", "", "extra flags for the apiextensions-apiserver (-crd), space separated")
	fs.StringVar(&o.profile, "profile", "", "write a CPU profile of each server's first run, from its /debug/pprof, into this directory (apikit.pprof and the peer's: sample.pprof, kube.pprof or apiextensions.pprof), and heap profiles with the objects (apikit-heap.pprof and .txt, ...)")
	fs.IntVar(&o.profSecs, "profile-seconds", 30, "with -profile: the profile's length, from the creates on (the server runs until it ends)")
	fs.StringVar(&o.profPhase, "profile-phase", "", "with -profile: profile one phase alone ("+phaseGet+", "+phaseList+" or "+phasePaged+"; the Flunder modes): its requests repeat, unmeasured, for -profile-seconds before the phase is measured")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return o, err
	}
	var errs []error
	for name, v := range map[string]int{"-profile-seconds": o.profSecs, "-n": o.n, "-workers": o.workers, "-runs": o.runs, "-lists": o.lists, "-page": o.pageSize, "-watch-events": o.watchEvents} {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, not %d", name, v))
		}
	}
	switch o.profPhase {
	case "", phaseGet, phaseList, phasePaged:
	default:
		errs = append(errs, fmt.Errorf("-profile-phase must be %s, %s or %s, not %q", phaseGet, phaseList, phasePaged, o.profPhase))
	}
	if o.n > 99999 || o.watchEvents > 99999 {
		errs = append(errs, errors.New("-n and -watch-events are at most 99999 (object names have five digits)"))
	}
	peer := keySample
	switch {
	case o.core && o.crd:
		errs = append(errs, errors.New("-core and -crd are two modes: one at a time"))
	case o.core:
		peer = keyKube
	case o.crd:
		peer = keyExt
	}
	if o.only != "" && o.only != keyApikit && o.only != peer {
		errs = append(errs, fmt.Errorf("-only must be %s or %s", keyApikit, peer))
	}
	return o, errors.Join(errs...)
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()

	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return fmt.Errorf("-repo: %w", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "examples", "wardle")); err != nil {
		return fmt.Errorf("-repo %s is not apikit's repository: %w", repo, err)
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("", "apikit-bench-"); err != nil {
			return fmt.Errorf("making the scratch directory: %w", err)
		}
		if !o.keep {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return fmt.Errorf("-work: %w", err)
	}
	if o.keep {
		logger.Printf("scratch directory (kept): %s", work)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	// The servers built from the working tree go into the run's scratch
	// directory, not the shared cache: runs from two worktrees at once
	// would otherwise overwrite each other's binaries.
	b := &builder{repo: repo, cache: filepath.Join(cache, "apikit", "bench"), out: filepath.Join(work, "bin"), logf: logger.Printf, tags: o.apikitTags}
	for _, dir := range []string{b.cache, b.out} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("making the build directories: %w", err)
		}
	}
	if o.core {
		return runCoreMode(ctx, o, b, work, started)
	}
	if o.crd {
		return runCRDMode(ctx, o, b, work, started)
	}
	// -only apikit needs no ~15-minute build of the sample-apiserver, as
	// buildPair spares the other modes theirs.
	bins, err := b.buildAll(o.wardleBin == "", o.only != keyApikit)
	if err != nil {
		return err
	}
	if o.wardleBin != "" {
		bins.wardle = o.wardleBin
	}
	infos := map[string]binaryInfo{}
	for key, bin := range map[string]string{keyApikit: bins.wardle, keySample: bins.sample} {
		if bin == "" {
			continue
		}
		if infos[key], err = inspect(bin); err != nil {
			return err
		}
	}

	var defaultBuild *binaryInfo
	if o.wardleBin == "" && o.apikitTags != "" {
		if defaultBuild, err = b.defaultWardle(); err != nil {
			return err
		}
	}

	r, err := newRunner(ctx, o, work, bins)
	if err != nil {
		return err
	}
	defer r.stop()
	etcd := r.etcd
	r.captureFloor = o.floor

	specs := []serverSpec{
		wardleSpec(bins.wardle, strings.Fields(o.wardleArgs)),
		sampleSpec(bins.sample, strings.Fields(o.sampleArgs)),
	}
	if o.only != "" {
		specs = filterSpecs(specs, o.only)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	runs, errs, err := runAll(ctx, o.runs, specs, r.run, func(i int, rec *runRecord) []string {
		rec.casSize = valueSizeOf(*rec)
		cas, err := rawEtcd(ctx, etcd, o.n, o.workers, rec.casSize)
		if err != nil {
			return []string{fmt.Sprintf("run %d, raw etcd: %v", i+1, err)}
		}
		rec.cas = &cas
		logger.Printf("run %d: raw etcd compare-and-put %.0f/s", i+1, cas.throughput())
		if !o.floor {
			return nil
		}
		bodies, ok := floorBodiesOf(*rec)
		if !ok {
			return []string{fmt.Sprintf("run %d, transport floor: no server's responses to answer with", i+1)}
		}
		if rec.floor, err = r.runFloor(ctx, self, bodies, i, o.n); err != nil {
			return []string{fmt.Sprintf("run %d, transport floor: %v", i+1, err)}
		}
		logger.Printf("run %d: transport floor GET %.3f ms, full LIST %.1f ms, paged LIST %.1f ms server CPU", i+1,
			rec.floor.get.cpuPerOp(), rec.floor.list.cpuMS(), rec.floor.paged.cpuMS())
		return nil
	})
	if err != nil {
		return err
	}

	figs := append(figures(runs, infos), defaultBuildFigures(defaultBuild)...)
	in := reportInput{
		label: o.label, when: started, elapsed: time.Since(started), machine: describeMachine(),
		p: o.params, runs: o.runs, etcdVer: bins.etcdVersion, fsync: o.fsync, apikitRev: gitRevision(repo),
		figs: figs, etcd: etcdFiguresOf(runs, figs), floor: floorFiguresOf(runs, figs), errs: errs,
		wardleArgs: o.wardleArgs, sampleArgs: o.sampleArgs, apikitTags: builtTags(o),
	}
	section := markdownRun(in)
	fmt.Println(section)
	return o.write(func(old string) string { return mergeDoc(docHeader, old, section) })
}

// write rewrites the -out file, if any, with what merge makes of its
// contents.
func (o options) write(merge func(old string) string) error {
	if o.out == "" {
		return nil
	}
	old, err := os.ReadFile(o.out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", o.out, err)
	}
	if err := os.WriteFile(o.out, []byte(merge(string(old))), 0o644); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	logger.Printf("wrote %s", o.out)
	return nil
}

// newRunner makes the PKI both servers share and starts etcd, which the
// runner's stop stops.
func newRunner(ctx context.Context, o options, work string, bins binaries) (*runner, error) {
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return nil, fmt.Errorf("-profile: %w", err)
		}
	}
	pki, tlsConf, err := makePKI(work)
	if err != nil {
		return nil, err
	}
	etcd, err := startEtcd(ctx, bins.etcd, work, o.fsync)
	if err != nil {
		return nil, err
	}
	logger.Printf("etcd %s at %s (pid %d)", bins.etcdVersion, etcd.endpoint, etcd.proc.pid())
	return &runner{p: o.params, etcd: etcd, pki: pki, tlsConf: tlsConf, dir: work,
		profileDir: o.profile, profileSeconds: o.profSecs, profilePhase: o.profPhase}, nil
}

// stop stops etcd.
func (r *runner) stop() {
	if err := r.etcd.stop(); err != nil {
		logger.Print(err)
	}
}

// runAll runs each of specs runs times with measure, alternating which
// goes first, so that neither always meets a cold or a warm machine; after,
// if not nil, adds to each run's record. It returns the records and the
// errors of failed runs and phases, and fails only when ctx ends.
func runAll(ctx context.Context, runs int, specs []serverSpec,
	measure func(ctx context.Context, spec serverSpec, runNo int) (*serverRun, error),
	after func(runNo int, rec *runRecord) []string) ([]runRecord, []string, error) {
	var recs []runRecord
	var errs []string
	for i := range runs {
		rec := runRecord{servers: map[string]*serverRun{}}
		order := specs
		if i%2 == 1 {
			order = reversed(specs)
		}
		for _, spec := range order {
			logger.Printf("run %d/%d: %s", i+1, runs, spec.title)
			res, err := measure(ctx, spec, i)
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("run %d, %s: %v", i+1, spec.key, err))
				logger.Printf("run %d: %s: %v", i+1, spec.key, err)
				continue
			}
			for _, e := range res.errs {
				errs = append(errs, fmt.Sprintf("run %d, %s: %s", i+1, spec.key, e))
			}
			rec.servers[spec.key] = res
			logger.Printf("run %d: %s: %s", i+1, spec.key, summary(res))
		}
		if after != nil {
			errs = append(errs, after(i, &rec)...)
		}
		recs = append(recs, rec)
	}
	return recs, errs, nil
}

// rawEtcd measures etcd's compare-and-put throughput on a prefix of its
// own, emptied before and after.
func rawEtcd(ctx context.Context, etcd *etcdServer, n, workers, size int) (casResult, error) {
	const prefix = "/bench/raw/"
	if err := etcd.wipe(ctx, prefix); err != nil {
		return casResult{}, err
	}
	res, err := etcd.compareAndPut(ctx, prefix, n, workers, size)
	if werr := etcd.wipe(ctx, prefix); err == nil {
		err = werr
	}
	return res, err
}

// valueSizeOf is the size apikit stored an object in, else the sample's,
// else a typical Flunder's.
func valueSizeOf(rec runRecord) int {
	for _, key := range []string{keyApikit, keySample} {
		if s := rec.servers[key]; s != nil && s.valueSize > 0 {
			return s.valueSize
		}
	}
	return 400
}

// summary is one line of a server run's main figures, for the progress log.
func summary(s *serverRun) string {
	var parts []string
	parts = append(parts, fmt.Sprintf("ready %.2fs", s.ready.Seconds()))
	for _, p := range []struct {
		name string
		ph   *phase
	}{{"create", s.create}, {"get", s.get}, {"update", s.update}, {"apply", s.apply}, {"delete", s.delete}} {
		if p.ph != nil {
			parts = append(parts, fmt.Sprintf("%s %.0f/s %.2fms", p.name, p.ph.throughput(), p.ph.cpuPerOp()))
		}
	}
	if s.list != nil {
		parts = append(parts, fmt.Sprintf("list %.0fms", s.list.wallMS()))
	}
	if s.paged != nil {
		parts = append(parts, fmt.Sprintf("paged %.0fms", s.paged.wallMS()))
	}
	if len(s.watch) > 0 {
		parts = append(parts, fmt.Sprintf("watch p99 %.1fms", percentile(s.watch, 99).Seconds()*1000))
	}
	parts = append(parts, fmt.Sprintf("rss %.0f/%.0f MiB", float64(s.idleRSS)/(1<<20), float64(s.loadedRSS)/(1<<20)))
	return strings.Join(parts, ", ")
}

func reversed(s []serverSpec) []serverSpec {
	out := make([]serverSpec, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

func filterSpecs(s []serverSpec, key string) []serverSpec {
	var out []serverSpec
	for _, x := range s {
		if x.key == key {
			out = append(out, x)
		}
	}
	return out
}

// gitRevision names the apikit source measured: the commit, and whether
// the working tree had changes.
func gitRevision(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(unknown revision)"
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		rev += " with uncommitted changes"
	}
	return rev
}
