package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Columns of the report: apikit, then its peer.
const (
	keyApikit = "apikit"
	keySample = "sample"
)

// runRecord is one run: both servers, then raw etcd.
type runRecord struct {
	servers map[string]*serverRun
	cas     *casResult
	casSize int
	// floor is the transport floor's run, if measured.
	floor *floorResult
}

// figure is one row of the report: a value per run for each server, and
// the target for the ratio apikit/peer.
type figure struct {
	name string
	// unit follows the values; format prints one.
	unit   string
	format string
	// higher says that a larger value is better (throughput).
	higher bool
	// target is the required apikit/peer ratio: at least it when higher,
	// at most it otherwise. 0: no target (for information).
	target float64
	values map[string][]float64
}

// medianOf is the median over runs of key's values.
func (f *figure) medianOf(key string) float64 { return median(f.values[key]) }

// ratio is apikit's median over the peer's.
func (f *figure) ratio() float64 { return ratio(f.medianOf(keyApikit), f.medianOf(keySample)) }

// verdict is "pass", "FAIL", "n/a" (no measure) or "" (no target).
func (f *figure) verdict() string {
	return judge(f.ratio(), f.target, f.higher)
}

// judge compares a ratio with its target.
func judge(r, target float64, higher bool) string {
	switch {
	case target == 0:
		return ""
	case math.IsNaN(r):
		return "n/a"
	case higher && r >= target, !higher && r <= target:
		return "pass"
	default:
		return "FAIL"
	}
}

// targetText is the target as the issue writes it.
func targetText(target float64, higher bool) string {
	if target == 0 {
		return ""
	}
	op := "<="
	if higher {
		op = ">="
	}
	return fmt.Sprintf("%s %.2g", op, target)
}

// fmtValue prints v with format, "n/a" when unknown.
func fmtValue(format string, v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// figures turns the runs and the binaries into the report's rows.
func figures(runs []runRecord, bins map[string]binaryInfo) []*figure {
	type get func(*serverRun) (float64, bool)
	phaseTP := func(pick func(*serverRun) *phase) get {
		return func(s *serverRun) (float64, bool) {
			if p := pick(s); p != nil {
				return p.throughput(), true
			}
			return 0, false
		}
	}
	phaseCPU := func(pick func(*serverRun) *phase) get {
		return func(s *serverRun) (float64, bool) {
			if p := pick(s); p != nil {
				return p.cpuPerOp(), true
			}
			return 0, false
		}
	}
	phaseOther := func(pick func(*serverRun) *phase, cpu func(*phase) time.Duration) get {
		return func(s *serverRun) (float64, bool) {
			if p := pick(s); p != nil {
				return perOpMS(cpu(p), p.ops), true
			}
			return 0, false
		}
	}
	etcdCPU := func(p *phase) time.Duration { return p.etcdCPU }
	clientCPU := func(p *phase) time.Duration { return p.clientCPU }
	listWall := func(pick func(*serverRun) *listPhase) get {
		return func(s *serverRun) (float64, bool) {
			if l := pick(s); l != nil {
				return l.wallMS(), true
			}
			return 0, false
		}
	}
	listCPU := func(pick func(*serverRun) *listPhase) get {
		return func(s *serverRun) (float64, bool) {
			if l := pick(s); l != nil {
				return l.cpuMS(), true
			}
			return 0, false
		}
	}
	watchP := func(p float64) get {
		return func(s *serverRun) (float64, bool) {
			if len(s.watch) == 0 {
				return 0, false
			}
			return percentile(s.watch, p).Seconds() * 1000, true
		}
	}
	create := func(s *serverRun) *phase { return s.create }
	gets := func(s *serverRun) *phase { return s.get }
	update := func(s *serverRun) *phase { return s.update }
	apply := func(s *serverRun) *phase { return s.apply }
	del := func(s *serverRun) *phase { return s.delete }
	full := func(s *serverRun) *listPhase { return s.list }
	paged := func(s *serverRun) *listPhase { return s.paged }
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }

	rows := []struct {
		f   figure
		get get
	}{
		{figure{name: "create throughput", unit: "/s", format: "%.0f", higher: true, target: 1.5}, phaseTP(create)},
		{figure{name: "create server CPU per op", unit: "ms", format: "%.3f", target: 0.5}, phaseCPU(create)},
		{figure{name: "GET throughput", unit: "/s", format: "%.0f", higher: true, target: 3}, phaseTP(gets)},
		{figure{name: "GET server CPU per op", unit: "ms", format: "%.3f", target: 0.2}, phaseCPU(gets)},
		{figure{name: "update throughput", unit: "/s", format: "%.0f", higher: true, target: 1.5}, phaseTP(update)},
		{figure{name: "update server CPU per op", unit: "ms", format: "%.3f", target: 0.5}, phaseCPU(update)},
		{figure{name: "apply throughput", unit: "/s", format: "%.0f", higher: true}, phaseTP(apply)},
		// Issue 13: server CPU per apply-patch update at most half the sample's.
		{figure{name: "apply server CPU per op", unit: "ms", format: "%.3f", target: 0.5}, phaseCPU(apply)},
		{figure{name: "delete throughput", unit: "/s", format: "%.0f", higher: true, target: 1.5}, phaseTP(del)},
		{figure{name: "delete server CPU per op", unit: "ms", format: "%.3f", target: 0.5}, phaseCPU(del)},
		{figure{name: "full LIST wall time", unit: "ms", format: "%.1f", target: 0.15}, listWall(full)},
		{figure{name: "full LIST server CPU", unit: "ms", format: "%.1f", target: 0.15}, listCPU(full)},
		{figure{name: "paged LIST wall time", unit: "ms", format: "%.1f", target: 0.2}, listWall(paged)},
		{figure{name: "paged LIST server CPU", unit: "ms", format: "%.1f", target: 0.2}, listCPU(paged)},
		{figure{name: "watch create->event p99", unit: "ms", format: "%.2f", target: 0.5}, watchP(99)},
		{figure{name: "watch create->event p50", unit: "ms", format: "%.2f"}, watchP(50)},
		{figure{name: "RSS idle", unit: "MiB", format: "%.1f", target: 0.3}, func(s *serverRun) (float64, bool) {
			return mib(s.idleRSS), s.idleRSS > 0
		}},
		{figure{name: "RSS with the objects", unit: "MiB", format: "%.1f", target: 0.4}, func(s *serverRun) (float64, bool) {
			return mib(s.loadedRSS), s.loadedRSS > 0
		}},
		{figure{name: "time to ready", unit: "s", format: "%.2f", target: 0.3}, func(s *serverRun) (float64, bool) {
			return s.ready.Seconds(), s.ready > 0
		}},
		{figure{name: "RSS idle: anonymous (RssAnon)", unit: "MiB", format: "%.1f"}, func(s *serverRun) (float64, bool) {
			return mib(s.idleAnon), s.idleAnon > 0
		}},
		{figure{name: "RSS idle: file-backed, mostly the binary (RssFile)", unit: "MiB", format: "%.1f"}, func(s *serverRun) (float64, bool) {
			return mib(s.idleFile), s.idleFile > 0
		}},
		{figure{name: "full LIST response size", unit: "KiB", format: "%.0f"}, func(s *serverRun) (float64, bool) {
			if s.list == nil {
				return 0, false
			}
			return float64(s.list.bytes) / 1024, true
		}},
		{figure{name: "full LIST bytes on the wire (gzip when served so)", unit: "KiB", format: "%.0f"}, func(s *serverRun) (float64, bool) {
			if s.list == nil {
				return 0, false
			}
			return float64(s.list.wire) / 1024, true
		}},
		{figure{name: "stored object size in etcd", unit: "B", format: "%.0f"}, func(s *serverRun) (float64, bool) {
			return float64(s.valueSize), s.valueSize > 0
		}},
		{figure{name: "etcd CPU per create", unit: "ms", format: "%.3f"}, phaseOther(create, etcdCPU)},
		{figure{name: "etcd CPU per GET", unit: "ms", format: "%.3f"}, phaseOther(gets, etcdCPU)},
		{figure{name: "load generator CPU per create", unit: "ms", format: "%.3f"}, phaseOther(create, clientCPU)},
		{figure{name: "load generator CPU per GET", unit: "ms", format: "%.3f"}, phaseOther(gets, clientCPU)},
	}
	var out []*figure
	for _, row := range rows {
		f := row.f
		f.values = valuesOf(runs, row.get)
		out = append(out, &f)
	}
	out = append(out, binaryFigures(bins, 0.5, 0.75)...)
	// Rows with a target first, then those for information.
	slices.SortStableFunc(out, func(a, b *figure) int {
		return cmp.Compare(boolInt(a.target == 0), boolInt(b.target == 0))
	})
	return out
}

// valuesOf is what get finds in each run of each server, by server.
func valuesOf(runs []runRecord, get func(*serverRun) (float64, bool)) map[string][]float64 {
	values := map[string][]float64{}
	for _, r := range runs {
		for key, s := range r.servers {
			if s == nil {
				continue
			}
			if v, ok := get(s); ok {
				values[key] = append(values[key], v)
			}
		}
	}
	return values
}

// binaryFigures are the binaries' size and modules, with their targets.
func binaryFigures(bins map[string]binaryInfo, sizeTarget, modulesTarget float64) []*figure {
	size := &figure{name: "stripped binary size", unit: "MB", format: "%.1f", target: sizeTarget, values: map[string][]float64{}}
	mods := &figure{name: "modules linked into the binary", unit: "", format: "%.0f", target: modulesTarget, values: map[string][]float64{}}
	for key, b := range bins {
		size.values[key] = []float64{float64(b.size) / 1e6}
		mods.values[key] = []float64{float64(b.modules)}
	}
	return []*figure{size, mods}
}

// defaultBuildFigures are the size and modules of wardle's default build,
// with the embedded etcd, when the measured one was built without it: for
// information, apikit's column only.
func defaultBuildFigures(info *binaryInfo) []*figure {
	if info == nil {
		return nil
	}
	return []*figure{
		{name: "stripped binary size, default build (with the embedded etcd)", unit: "MB", format: "%.1f", values: map[string][]float64{keyApikit: {float64(info.size) / 1e6}}},
		{name: "modules linked, default build (with the embedded etcd)", format: "%.0f", values: map[string][]float64{keyApikit: {float64(info.modules)}}},
	}
}

// builtTags is the tags apikit's servers were built with, for the report:
// "" when they were prebuilt (-wardle-bin) or built without tags.
func builtTags(o options) string {
	if o.wardleBin != "" {
		return ""
	}
	return o.apikitTags
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// etcdFigures are raw etcd compare-and-put throughput and each server's
// create throughput as a share of it.
type etcdFigures struct {
	cas       []float64 // per run, ops/s
	valueSize int
	share     map[string]float64 // server create throughput / CAS throughput
}

const etcdShareTarget = 0.7

func etcdFiguresOf(runs []runRecord, figs []*figure) etcdFigures {
	e := etcdFigures{share: map[string]float64{}}
	for _, r := range runs {
		if r.cas != nil {
			e.cas = append(e.cas, r.cas.throughput())
			e.valueSize = r.casSize
		}
	}
	for _, f := range figs {
		if f.name == "create throughput" {
			for _, key := range []string{keyApikit, keySample} {
				e.share[key] = ratio(f.medianOf(key), median(e.cas))
			}
		}
	}
	return e
}

// machine describes where the benchmark ran.
type machine struct {
	cpu, memory, kernel, goVersion string
	cores                          int
}

func describeMachine() machine {
	m := machine{cpu: "unknown", memory: "unknown", kernel: "unknown", goVersion: runtime.Version(), cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if v := procField(b, "model name"); v != "" {
			m.cpu = v
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if v := procField(b, "MemTotal"); v != "" {
			var kb float64
			if _, err := fmt.Sscanf(v, "%f kB", &kb); err == nil {
				m.memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.goVersion = strings.TrimSpace(string(out))
	}
	return m
}

// line is the report's line on the machine.
func (m machine) line() string {
	return fmt.Sprintf("- machine: %s, %d cores, %s memory, %s\n", m.cpu, m.cores, m.memory, m.kernel)
}

// fsyncText says how etcd ran.
func fsyncText(on bool) string {
	if on {
		return "on"
	}
	return "off (`--unsafe-no-fsync`)"
}

// procField is the value of the first "name : value" line of a /proc file.
func procField(b []byte, name string) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// reportInput is everything a report says.
type reportInput struct {
	label      string
	when       time.Time
	elapsed    time.Duration
	machine    machine
	p          params
	runs       int
	etcdVer    string
	fsync      bool
	apikitRev  string
	figs       []*figure
	etcd       etcdFigures
	floor      floorFigures
	errs       []string
	sampleArgs string
	wardleArgs string
	// apikitTags are the build tags of apikit's server, if any.
	apikitTags string
}

// runMarker starts every run's section in docs/benchmarks.md; what comes
// before the first one is the page's fixed header.
const runMarker = "<!-- bench:run -->"

// identityLine says, for a run with -identity, that its responses were not
// compressed; nothing otherwise.
func identityLine(p params) string {
	if !p.identity {
		return ""
	}
	return "- responses uncompressed (`-identity`: every request sends Accept-Encoding: identity, so neither server gzips its LISTs)\n"
}

// tagsNote says what the build tags leave out.
func tagsNote(tags string) string {
	if tags == noEmbedTag {
		return ": without the embedded etcd, which the benchmark does not run (both servers store in its etcd; the sample links no etcd server either); the default build's size and modules are the rows marked \"default build\""
	}
	return ""
}

// markdownRun is one run's section of docs/benchmarks.md.
func markdownRun(in reportInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n## %s\n\n", runMarker, runTitle(in.when, in.label))
	b.WriteString(in.machine.line())
	fmt.Fprintf(&b, "- %s; etcd %s (one process for both servers, fsync %s); apikit %s; k8s.io/sample-apiserver %s\n",
		in.machine.goVersion, in.etcdVer, fsyncText(in.fsync), in.apikitRev, sampleVersion)
	fmt.Fprintf(&b, "- N=%d Flunders, %d workers, JSON over HTTP/2, %d runs (medians), %d LISTs per run (paged: limit=%d), %d watch events; the run took %v\n",
		in.p.n, in.p.workers, in.runs, in.p.lists, in.p.pageSize, in.p.watchEvents, in.elapsed.Round(time.Second))
	b.WriteString(identityLine(in.p))
	if in.apikitTags != "" {
		fmt.Fprintf(&b, "- wardle built with `-tags %s`%s\n", in.apikitTags, tagsNote(in.apikitTags))
	}
	if in.wardleArgs != "" || in.sampleArgs != "" {
		fmt.Fprintf(&b, "- extra flags: wardle `%s`; sample-apiserver `%s`\n", in.wardleArgs, in.sampleArgs)
	}
	b.WriteString("\n")
	b.WriteString(table(in))
	b.WriteString("\n")
	b.WriteString(spreadTable(in.figs, samplePeer))
	b.WriteString(errorList(in.errs))
	return b.String()
}

// peer names the column apikit is compared with: its key in the figures'
// values, its title in the tables and its short name in the ratio's.
type peer struct{ key, title, short string }

// samplePeer is the sample-apiserver's column.
var samplePeer = peer{keySample, "sample-apiserver", "sample"}

// table is the main table: medians, ratio, target, verdict; then raw etcd.
func table(in reportInput) string {
	var b strings.Builder
	b.WriteString(figureTable(in.figs, samplePeer))
	e := in.etcd
	fmt.Fprintf(&b, "| raw etcd compare-and-put throughput, %d B values, %d workers (/s) | %s | | | | |\n",
		e.valueSize, in.p.workers, fmtValue("%.0f", median(e.cas)))
	fmt.Fprintf(&b, "| create throughput / raw etcd compare-and-put | %s | %s | | %s | %s |\n",
		fmtValue("%.2f", e.share[keyApikit]), fmtValue("%.2f", e.share[keySample]),
		targetText(etcdShareTarget, true), judge(e.share[keyApikit], etcdShareTarget, true))
	b.WriteString(in.floor.rows())
	return b.String()
}

// figureTable is a row per figure: the medians of apikit and p, their
// ratio, the target and the verdict.
func figureTable(figs []*figure, p peer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| figure | apikit | %s | apikit/%s | target | |\n|---|---:|---:|---:|---|---|\n", p.title, p.short)
	for _, f := range figs {
		unit := ""
		if f.unit != "" {
			unit = " (" + f.unit + ")"
		}
		a, o := f.medianOf(keyApikit), f.medianOf(p.key)
		r := ratio(a, o)
		fmt.Fprintf(&b, "| %s%s | %s | %s | %s | %s | %s |\n", f.name, unit,
			fmtValue(f.format, a), fmtValue(f.format, o), fmtValue("%.2f", r), targetText(f.target, f.higher), judge(r, f.target, f.higher))
	}
	return b.String()
}

// spreadTable shows each figure's smallest and largest value over the runs.
func spreadTable(figs []*figure, p peer) string {
	var b strings.Builder
	b.WriteString("<details><summary>Spread over the runs (min – max)</summary>\n\n")
	fmt.Fprintf(&b, "| figure | apikit | %s |\n|---|---:|---:|\n", p.title)
	for _, f := range figs {
		cells := make([]string, 0, 2)
		for _, key := range []string{keyApikit, p.key} {
			lo, hi := minMax(f.values[key])
			cells = append(cells, fmt.Sprintf("%s – %s", fmtValue(f.format, lo), fmtValue(f.format, hi)))
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", f.name, cells[0], cells[1])
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

// runTitle is a run's heading: when, and what.
func runTitle(when time.Time, label string) string {
	title := when.UTC().Format("2006-01-02 15:04 UTC")
	if label != "" {
		title += " — " + label
	}
	return title
}

// errorList is a run's errors, one line each.
func errorList(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nErrors:\n\n")
	for _, e := range errs {
		fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(e, "\n", " "))
	}
	return b.String()
}

// mergeDoc puts run, the newest, first under header, keeping the earlier
// runs of old (the previous contents of the page).
func mergeDoc(header, old, run string) string {
	var earlier string
	if i := strings.Index(old, runMarker); i >= 0 {
		earlier = old[i:]
	}
	doc := strings.TrimRight(header, "\n") + "\n\n" + strings.TrimRight(run, "\n") + "\n"
	if earlier != "" {
		doc += "\n" + strings.TrimRight(earlier, "\n") + "\n"
	}
	return doc
}

// docHeader is the fixed top of docs/benchmarks.md.
const docHeader = `# Benchmarks: apikit beside k8s.io/sample-apiserver

This page is written by the load benchmark in [bench/](../bench). It runs
apikit's examples/wardle and k8s.io/sample-apiserver ` + sampleVersion + ` (built by
bench/sampleapiserver to run without a kube-apiserver) one after the other
against **one etcd process** on one machine, with the same load, and reports
each figure for both and the ratio apikit/sample-apiserver against the
targets of issue 7 (and of issue 13 for server-side apply). Compare ratios within one run: the machine is shared and
noisy, absolute numbers move from run to run.

Run it (builds wardle from the working tree, the sample-apiserver once per
version and etcd from tools/etcd; a cold build of the sample-apiserver takes
~15 minutes, then each run of both servers ~30 s: 3-4 minutes in all with the
default flags):

` + "```sh" + `
cd bench && go run . -out ../docs/benchmarks.md -label "what changed"
` + "```" + `

Flags: ` + "`-runs`" + ` (default 5), ` + "`-n`" + ` (5000), ` + "`-workers`" + ` (16), ` + "`-lists`" + `, ` + "`-page`" + `,
` + "`-watch-events`" + `, ` + "`-etcd-fsync`" + `, ` + "`-wardle-args`" + `/` + "`-sample-args`" + ` (extra server flags),
` + "`-wardle-bin`" + ` (a prebuilt wardle), ` + "`-apikit-tags`" + ` (build tags, default ` + "`apikit_noembed`" + `), ` + "`-only apikit`" + ` (one server), ` + "`-keep`" + ` (keep the scratch
directory: logs and a kubeconfig per server), ` + "`-identity`" + ` (no gzip: every response
uncompressed, on both servers), ` + "`-floor=false`" + ` (no transport floor); ` + "`go run . -h`" + ` lists them. Each new run
is added at the top; earlier ones stay below. ` + "`cd bench && go test ./...`" + ` tests the
harness only; ./test.sh does not run the benchmark.

What is measured, for each server in each run (servers alternate which goes
first; each starts fresh, on an empty etcd prefix of its own):

- **time to ready**: from starting the process to the first 200 from /readyz;
  **RSS idle**: VmRSS from /proc/<pid>/status 3 s later (` + "`-settle`" + `).
- **create, GET, update, apply, delete**: N requests each from the workers over one
  HTTP/2 connection with a client certificate (the CA is the same for both
  servers; authorization allows everything on both), pre-encoded JSON bodies;
  throughput, and server CPU per op from /proc/<pid>/stat utime+stime deltas.
  Updates are PUTs of the whole object at the resourceVersion its create
  returned (both servers record managedFields on them). Applies are
  server-side applies after the updates: PATCHes with Content-Type
  application/apply-patch+yaml and ?fieldManager=bench&force=true whose JSON
  body (valid YAML) sets each Flunder's spec.flunderReference to a new value;
  force because the load generator's Update manager owns that field since the
  create, so a new value conflicts without it. A GET of one Flunder then
  checks the applied value and bench's Apply entry in managedFields. Deletes
  return the object (200).
- **gzip**: every request asks for it (Accept-Encoding: gzip), as Go's
  transport, client-go and kubectl do; the benchmark's client did so unasked
  (Go's transport adds it) in every earlier run, and now sets it itself and
  decodes, to count the bytes on the wire. Both servers gzip responses over
  128 KiB, so the full LIST and the pages of 500 are compressed on both and
  compared alike: the sample-apiserver's in every run on this page, apikit's
  since its response compression (2026-12-01). LIST sizes are given decoded
  and on the wire.
- **full LIST** of the N Flunders and **paged LIST** (limit=500, following
  continue tokens): wall time (median of the LISTs) and server CPU per LIST
  (` + "`-lists`" + `, 40 of each by default: /proc counts CPU in 10 ms ticks, so
  that a LIST's CPU is known to 0.25 ms); one untimed LIST first checks the count. **RSS with the objects** after them.
- **watch create->event**: a watch from the current resourceVersion, then
  1,000 creates one after another; the time from sending each create to
  receiving its ADDED event, p99 and p50.
- **raw etcd compare-and-put**: N transactions "create the key if absent"
  with values of the size apikit stores, from the same number of workers over
  one etcd client connection, against the same etcd: the physical limit that
  apikit's create throughput is measured against.
- **transport floor** (` + "`-floor`" + `, on by default; since 2026-12-02): after each
  run, a minimal HTTPS server (this program as ` + "`bench floor-server`" + `: crypto/tls
  asking for the client certificate, x/net/http2 configured as both servers
  configure it, no authentication, no storage) answers the same N GETs and
  LISTs, whole and in pages, with the bytes apikit served for them, from
  memory, gzipped and written as apikit does (klauspost's encoder at kube's
  level 1, in pieces of one TLS record). Its CPU per GET and per LIST is what
  any Go server pays for the same answers on the same connection;
  "floor/sample" is that as a share of the sample-apiserver's figure. Where
  it is above a ratio's target, no server code can meet the target: the
  transport alone costs more.
- **stripped binary size** (` + "`-ldflags=-s -w`" + `) and **modules** linked into it
  (` + "`dep`" + ` lines of ` + "`go version -m`" + `). Since 2026-12-02 wardle is built with
  ` + "`-tags apikit_noembed`" + ` (` + "`-apikit-tags`" + `): without the embedded etcd, its
  default backend, which the benchmark never runs (both servers store in
  its etcd, and the sample-apiserver links no etcd server either). The
  default build's size and modules are reported beside it, for
  information; the runs before 2026-12-02 measured the default build.

The load generator, both servers and etcd share the machine's cores; server
CPU per op is the fairer figure when the machine is busy, and throughput
ratios are bounded by what etcd and the load generator leave free.

How the two servers differ beyond the code under test (all stock):

- Both record server-side-apply ` + "`managedFields`" + ` on every write (apikit since
  2026-12-01; the runs before it recorded none, so their stored objects and
  responses were smaller than the sample's). The sample-apiserver stores
  v1alpha1, apikit v1beta1 (the served version).
- The sample-apiserver runs API Priority and Fairness and NamespaceLifecycle,
  webhook and policy admission against a fake core API (see
  bench/sampleapiserver); the benchmark's user is in system:masters, which
  APF exempts. Its BanFlunder reads Fischers from an informer; apikit's
  BanFlunder lists them from storage on every Flunder create and update.
- Both check the client certificate on every request: the sample-apiserver
  (k8s.io/apiserver v0.37.2's x509 authenticator) verifies its chain each
  time; apikit verifies a chain once per CA pool and then finds it in a
  cache keyed by the chain's SHA-256 (authn's verifyCache).

Profiling: wardle serves /debug/pprof/ (` + "`--profiling`" + `, on by default, to
cluster-admin). Start it by hand against any etcd with the flags bench/server.go
gives it but the certificate ones (it then makes its own development PKI),
load it with the same requests, and fetch
` + "`/debug/pprof/profile?seconds=10`" + ` with the admin client certificate of its
` + "`<data-dir>/kubeconfig`" + ` meanwhile. Or let the benchmark do it: ` + "`-profile DIR`" + ` profiles each
server's first run from the creates on, and ` + "`-profile-phase get`" + ` (` + "`list`" + `, ` + "`paged`" + `)
one phase alone, its requests repeated for ` + "`-profile-seconds`" + ` before it is measured.
`
