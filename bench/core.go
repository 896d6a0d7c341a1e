package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// The core mode (-core) runs apikit's core group (examples/wardle
// --core-api) beside kube-apiserver on one etcd, with ConfigMaps: issue
// 17's "performance" bullet.

// kubeVersion is the kube-apiserver release tools/kube-apiserver pins.
const (
	kubeVersion  = "v1.37.2"
	kubeGitMajor = "1"
	kubeGitMinor = "37"
)

// keyKube is the core mode's peer column: kube-apiserver.
const keyKube = "kube"

// The core mode's objects: ConfigMaps in the default namespace, which
// both servers create at start.
const configMaps = "/api/v1/namespaces/" + namespace + "/configmaps"

// configMapName is the name of the i-th benchmark ConfigMap.
func configMapName(i int) string { return fmt.Sprintf("cm-%05d", i) }

// configMapPrefix starts every benchmark ConfigMap's name: apikit also
// publishes kube-root-ca.crt in every namespace, as kube-controller-manager
// does beside a kube-apiserver, which here runs alone.
const configMapPrefix = "cm-"

// configMapBody is the JSON of the i-th ConfigMap: labels and two data
// keys, an application's small settings file among them.
func configMapBody(name string, i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap",`+
		`"metadata":{"name":%q,"namespace":%q,"labels":{"app":"bench","index":"%d"}},`+
		`"data":{"mode":"fast","settings.yaml":"replicas: %d\nlogLevel: info\nendpoint: https://backend-%05d.example.com:8443\n"}}`,
		name, namespace, i, i%7+1, i)
}

// countNamed counts the items of a list whose name starts with prefix.
func countNamed(body []byte, prefix string) (int, error) {
	var l struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return 0, fmt.Errorf("decoding the list: %w", err)
	}
	n := 0
	for _, it := range l.Items {
		if strings.HasPrefix(it.Metadata.Name, prefix) {
			n++
		}
	}
	return n, nil
}

// countConfigMaps counts the benchmark's ConfigMaps in a list.
func countConfigMaps(body []byte) (int, error) { return countNamed(body, configMapPrefix) }

// serviceAccountKeys are the service-account token key files both servers
// get, as a cluster's API servers share them.
type serviceAccountKeys struct {
	signing, public string
}

// writeServiceAccountKeys writes an ECDSA P-256 key pair into dir.
func writeServiceAccountKeys(dir string) (serviceAccountKeys, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return serviceAccountKeys{}, fmt.Errorf("making the service-account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return serviceAccountKeys{}, fmt.Errorf("encoding the service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return serviceAccountKeys{}, fmt.Errorf("encoding the service-account public key: %w", err)
	}
	k := serviceAccountKeys{signing: filepath.Join(dir, "sa.key"), public: filepath.Join(dir, "sa.pub")}
	for path, data := range map[string][]byte{
		k.signing: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		k.public:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	} {
		if err := certs.WriteFile(path, data, 0o600); err != nil {
			return serviceAccountKeys{}, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return k, nil
}

// controlPlaneFlags are the flags kube-apiserver cannot start without
// beyond serving and etcd, which both servers get alike: service-account
// token keys and issuer, the Service IP range, and the authorization mode
// (RBAC, kube-apiserver's usual mode but for the Node authorizer, which
// apikit has not; the benchmark's user is in system:masters, which both
// allow before asking RBAC).
func (k serviceAccountKeys) controlPlaneFlags() []string {
	return []string{
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + k.public,
		"--service-account-signing-key-file=" + k.signing,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
	}
}

// wardleCoreSpec is examples/wardle serving the core group too.
func wardleCoreSpec(bin string, sa serviceAccountKeys, extra []string) serverSpec {
	s := wardleSpec(bin, append(append([]string{"--core-api"}, sa.controlPlaneFlags()...), extra...))
	s.title = "apikit examples/wardle --core-api"
	return s
}

// kubeSpec is kube-apiserver with the flags it needs and defaults
// otherwise (admission plugins among them).
func kubeSpec(bin string, sa serviceAccountKeys, extra []string) serverSpec {
	return serverSpec{
		key: keyKube, title: "kube-apiserver " + kubeVersion, bin: bin, prefix: "/bench/kube",
		args: func(port int, pki pkiFiles, etcd, dir string) []string {
			args := []string{
				"--bind-address=127.0.0.1",
				// Loopback: the endpoint reconciler would publish it as the
				// kubernetes Service's endpoint, which kube refuses for
				// loopback addresses; hence also no reconciler.
				"--advertise-address=127.0.0.1",
				"--endpoint-reconciler-type=none",
				"--secure-port=" + strconv.Itoa(port),
				"--cert-dir=" + filepath.Join(dir, "kube-certs"),
				"--etcd-servers=" + etcd,
				"--etcd-prefix=/bench/kube",
				"--tls-cert-file=" + pki.servingCert,
				"--tls-private-key-file=" + pki.servingKey,
				"--client-ca-file=" + pki.caCert,
			}
			return append(append(args, sa.controlPlaneFlags()...), extra...)
		},
	}
}

// kubeAPIServer builds tools/kube-apiserver, stripped and with its
// version string, once per content of its go.mod and go.sum and Go
// version. A cold build takes ~20 minutes on 2 cores; the e2e test's
// unstripped build of the same module fills Go's build cache, after which
// this one only links. $APIKIT_KUBE_APISERVER names a prebuilt binary
// instead, as for e2e/kubeapiserver_test.go.
func (b *builder) kubeAPIServer() (string, error) {
	if bin := os.Getenv("APIKIT_KUBE_APISERVER"); bin != "" {
		return bin, nil
	}
	return b.kubeProgram(kubeProgram{
		what: "kube-apiserver " + kubeVersion, dir: filepath.Join(b.repo, "tools", "kube-apiserver"),
		files: []string{"go.mod", "go.sum"}, pkg: "k8s.io/kubernetes/cmd/kube-apiserver", name: "kube-apiserver-" + kubeVersion,
		gitVersion: kubeVersion, gitMajor: kubeGitMajor, gitMinor: kubeGitMinor, cold: "~20 minutes",
	})
}

// runCore starts spec's server on an empty etcd prefix, creates, GETs and
// LISTs r.p.n ConfigMaps, and stops it.
func (r *runner) runCore(ctx context.Context, spec serverSpec, runNo int) (*serverRun, error) {
	l, err := r.start(ctx, spec, runNo)
	if err != nil {
		return nil, err
	}
	defer l.stop()
	c, res, pid := l.c, l.res, l.proc.pid()
	// kube-apiserver makes the default namespace in a post-start hook
	// that readiness does not wait for.
	if err := waitFor(ctx, c, "/api/v1/namespaces/"+namespace, time.Minute); err != nil {
		return nil, fmt.Errorf("%s: %w", spec.key, err)
	}
	fail := func(what string, err error) { l.fail(runNo, what, err) }
	defer r.profileRun(ctx, l, spec, runNo)()

	n, w := r.p.n, r.p.workers
	bufs := make([]bytes.Buffer, w)
	names := make([]string, n)
	bodies := make([][]byte, n)
	for i := range n {
		names[i] = configMapName(i)
		bodies[i] = configMapBody(names[i], i)
	}
	res.create, err = r.measure(ctx, pid, n, w, func(ctx context.Context, wk, i int) error {
		return c.do(ctx, http.MethodPost, configMaps, bodies[i], http.StatusCreated, &bufs[wk])
	})
	if err != nil {
		fail("create", err)
		return res, nil
	}
	if res.valueSize, err = r.etcd.valueSize(ctx, spec.prefix+"/configmaps/"+namespace+"/"+configMapPrefix); err != nil {
		fail("stored size", err)
	}
	res.get, err = r.measure(ctx, pid, n, w, func(ctx context.Context, wk, i int) error {
		return c.do(ctx, http.MethodGet, configMaps+"/"+names[i], nil, http.StatusOK, &bufs[wk])
	})
	if err != nil {
		fail("get", err)
	}
	if res.list, err = r.lists(ctx, c, pid, configMaps, 0, n, countConfigMaps); err != nil {
		fail("list", err)
	}
	if res.paged, err = r.lists(ctx, c, pid, configMaps, r.p.pageSize, n, countConfigMaps); err != nil {
		fail("paged list", err)
	}
	if res.loadedRSS, err = rss(pid); err != nil {
		return nil, err
	}
	return res, ctx.Err()
}

// profile fetches a CPU profile of seconds from the server's
// /debug/pprof/profile (both serve it to system:masters) into path; the
// channel gets the outcome.
func profile(ctx context.Context, c *apiClient, seconds int, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		var buf bytes.Buffer
		_, err := c.send(ctx, http.MethodGet, "/debug/pprof/profile?seconds="+strconv.Itoa(seconds), "", nil, http.StatusOK, &buf)
		if err == nil {
			err = os.WriteFile(path, buf.Bytes(), 0o644)
		}
		if err == nil {
			logger.Printf("CPU profile: %s (go tool pprof -top %s)", path, path)
		}
		done <- err
	}()
	return done
}

// waitFor polls path until it answers 200, for up to limit.
func waitFor(ctx context.Context, c *apiClient, path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var buf bytes.Buffer
	for {
		err := c.do(ctx, http.MethodGet, path, nil, http.StatusOK, &buf)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s: no 200 within %v: %w", path, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// coreFigures are the core mode's rows: issue 17's targets first (the
// ratio apikit/kube-apiserver), then figures for information.
func coreFigures(runs []runRecord, bins map[string]binaryInfo) []*figure {
	type get func(*serverRun) (float64, bool)
	ofPhase := func(pick func(*serverRun) *phase, v func(*phase) float64) get {
		return func(s *serverRun) (float64, bool) {
			if p := pick(s); p != nil {
				return v(p), true
			}
			return 0, false
		}
	}
	ofList := func(pick func(*serverRun) *listPhase, v func(*listPhase) float64) get {
		return func(s *serverRun) (float64, bool) {
			if l := pick(s); l != nil {
				return v(l), true
			}
			return 0, false
		}
	}
	create := func(s *serverRun) *phase { return s.create }
	gets := func(s *serverRun) *phase { return s.get }
	full := func(s *serverRun) *listPhase { return s.list }
	paged := func(s *serverRun) *listPhase { return s.paged }
	cpu := (*phase).cpuPerOp
	tp := (*phase).throughput
	etcd := func(p *phase) float64 { return perOpMS(p.etcdCPU, p.ops) }
	listCPU, listWall := (*listPhase).cpuMS, (*listPhase).wallMS
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	bytesOf := func(s *serverRun, v func(*listPhase) int) (float64, bool) {
		if s.list == nil {
			return 0, false
		}
		return float64(v(s.list)) / 1024, true
	}

	rows := []struct {
		f   figure
		get get
	}{
		{figure{name: "create server CPU per op", unit: "ms", format: "%.3f", target: 0.5}, ofPhase(create, cpu)},
		{figure{name: "GET server CPU per op", unit: "ms", format: "%.3f", target: 0.5}, ofPhase(gets, cpu)},
		{figure{name: "full LIST server CPU", unit: "ms", format: "%.1f", target: 0.5}, ofList(full, listCPU)},
		{figure{name: "RSS idle", unit: "MiB", format: "%.1f", target: 0.3}, func(s *serverRun) (float64, bool) {
			return mib(s.idleRSS), s.idleRSS > 0
		}},
		{figure{name: "time to ready", unit: "s", format: "%.2f", target: 0.2}, func(s *serverRun) (float64, bool) {
			return s.ready.Seconds(), s.ready > 0
		}},
		{figure{name: "create throughput", unit: "/s", format: "%.0f", higher: true}, ofPhase(create, tp)},
		{figure{name: "GET throughput", unit: "/s", format: "%.0f", higher: true}, ofPhase(gets, tp)},
		{figure{name: "full LIST wall time", unit: "ms", format: "%.1f"}, ofList(full, listWall)},
		{figure{name: "paged LIST server CPU", unit: "ms", format: "%.1f"}, ofList(paged, listCPU)},
		{figure{name: "paged LIST wall time", unit: "ms", format: "%.1f"}, ofList(paged, listWall)},
		{figure{name: "RSS with the objects", unit: "MiB", format: "%.1f"}, func(s *serverRun) (float64, bool) {
			return mib(s.loadedRSS), s.loadedRSS > 0
		}},
		{figure{name: "RSS idle: anonymous (RssAnon)", unit: "MiB", format: "%.1f"}, func(s *serverRun) (float64, bool) {
			return mib(s.idleAnon), s.idleAnon > 0
		}},
		{figure{name: "RSS idle: file-backed (RssFile)", unit: "MiB", format: "%.1f"}, func(s *serverRun) (float64, bool) {
			return mib(s.idleFile), s.idleFile > 0
		}},
		{figure{name: "full LIST response size", unit: "KiB", format: "%.0f"}, func(s *serverRun) (float64, bool) {
			return bytesOf(s, func(l *listPhase) int { return l.bytes })
		}},
		{figure{name: "full LIST bytes on the wire", unit: "KiB", format: "%.0f"}, func(s *serverRun) (float64, bool) {
			return bytesOf(s, func(l *listPhase) int { return l.wire })
		}},
		{figure{name: "stored ConfigMap size in etcd", unit: "B", format: "%.0f"}, func(s *serverRun) (float64, bool) {
			return float64(s.valueSize), s.valueSize > 0
		}},
		{figure{name: "etcd CPU per create", unit: "ms", format: "%.3f"}, ofPhase(create, etcd)},
		{figure{name: "etcd CPU per GET", unit: "ms", format: "%.3f"}, ofPhase(gets, etcd)},
	}
	out := make([]*figure, 0, len(rows)+2)
	for _, row := range rows {
		f := row.f
		f.values = valuesOf(runs, row.get)
		out = append(out, &f)
	}
	return append(out, binaryFigures(bins, 0, 0)...)
}

// coreRunMarker starts every core-mode run's section in docs/benchmarks.md.
const coreRunMarker = "<!-- bench:core-run -->"

// coreSectionMarker starts the core mode's part of docs/benchmarks.md, at
// its end: the sample-apiserver mode keeps everything after its own first
// run, so the two modes never overwrite each other.
const coreSectionMarker = "<!-- bench:core -->"

// coreReportInput is everything a core-mode report says.
type coreReportInput struct {
	label               string
	when                time.Time
	elapsed             time.Duration
	machine             machine
	p                   params
	runs                int
	etcdVer, apikitRev  string
	fsync               bool
	figs                []*figure
	errs                []string
	wardleArgs, kubeArg string
}

// kubePeer is kube-apiserver's column.
var kubePeer = peer{keyKube, "kube-apiserver", "kube"}

// markdownCoreRun is one core-mode run's section of docs/benchmarks.md.
func markdownCoreRun(in coreReportInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### %s\n\n", coreRunMarker, runTitle(in.when, in.label))
	b.WriteString(in.machine.line())
	fmt.Fprintf(&b, "- %s; etcd %s (one process for both servers, fsync %s); apikit %s (examples/wardle --core-api); kube-apiserver %s\n",
		in.machine.goVersion, in.etcdVer, fsyncText(in.fsync), in.apikitRev, kubeVersion)
	fmt.Fprintf(&b, "- N=%d ConfigMaps, %d workers, JSON over HTTP/2, %d runs (medians), %d LISTs per run (paged: limit=%d); the run took %v\n",
		in.p.n, in.p.workers, in.runs, in.p.lists, in.p.pageSize, in.elapsed.Round(time.Second))
	b.WriteString(identityLine(in.p))
	if in.wardleArgs != "" || in.kubeArg != "" {
		fmt.Fprintf(&b, "- extra flags: wardle `%s`; kube-apiserver `%s`\n", in.wardleArgs, in.kubeArg)
	}
	b.WriteString("\n")
	b.WriteString(figureTable(in.figs, kubePeer))
	b.WriteString("\n")
	b.WriteString(spreadTable(in.figs, kubePeer))
	b.WriteString(errorList(in.errs))
	return b.String()
}

// mergeCoreDoc puts run, the newest, first in the core section of old (the
// page's contents) under coreDocHeader, keeping its earlier runs; a page
// without the section gets it at its end.
func mergeCoreDoc(old, run string) string {
	return mergeSection(old, coreSectionMarker, coreRunMarker, coreDocHeader, run)
}

// coreDocHeader introduces the core mode's runs in docs/benchmarks.md.
const coreDocHeader = `## The core group beside kube-apiserver ` + kubeVersion + ` (ConfigMaps)

Issue 17's performance check: apikit's core group, as ` + "`examples/wardle --core-api`" + `
serves it (the RBAC policy, flow control, admission with NamespaceLifecycle,
the garbage collector and the namespace controllers of a wardle started so,
all on by default), beside kube-apiserver ` + kubeVersion + ` (built by
tools/kube-apiserver), one after the other against one etcd, with ConfigMaps
in the default namespace. Run it (builds wardle from the working tree,
kube-apiserver once per tools/kube-apiserver's go.mod: ~20 minutes cold, a
link when e2e/kubeapiserver_test.go built it first):

` + "```sh" + `
cd bench && go run . -core -out ../docs/benchmarks.md -label "what changed"
` + "```" + `

` + "`-kube-args`" + ` adds kube-apiserver flags, ` + "`-wardle-args`" + ` wardle's;
` + "`-profile DIR`" + ` writes a CPU profile of each server's first run from its
/debug/pprof (` + "`-profile-seconds`" + `, 30, from the creates on) and heap
profiles with the objects (` + "`<server>-heap.pprof`" + `, ` + "`.txt`" + ` with MemStats);
` + "`-n`" + `, ` + "`-workers`" + `, ` + "`-runs`" + `, ` + "`-lists`" + `, ` + "`-page`" + `, ` + "`-keep`" + `, ` + "`-only`" + ` as above;
` + "`$APIKIT_KUBE_APISERVER`" + ` names a prebuilt kube-apiserver.

Both servers get the same serving certificate, client CA, service-account
key pair and issuer, ` + "`--service-cluster-ip-range=10.0.0.0/24`" + ` and
` + "`--authorization-mode=RBAC`" + ` (kube-apiserver's usual mode but for the Node
authorizer, which apikit has not); kube-apiserver also
` + "`--advertise-address=127.0.0.1 --endpoint-reconciler-type=none`" + ` (it refuses
a loopback endpoint for the kubernetes Service) and otherwise its defaults:
its default admission plugins, flow control, its in-process controllers.
The load generator's client certificate is in system:masters, which both
authorize before RBAC and flow control exempts on both. Each figure:

- **time to ready**: from starting the process to the first 200 from /readyz;
  **RSS idle**: VmRSS 3 s later (` + "`-settle`" + `).
- **create, GET**: N ConfigMaps (two labels, two data keys, ~330 bytes of
  JSON) POSTed, then each GET, from the workers over one HTTP/2 connection;
  **server CPU per op**: the server's utime+stime from /proc/<pid>/stat over
  the phase, divided by N. Before the creates the benchmark waits for the
  default namespace, which kube-apiserver makes after it is ready.
- **full LIST** of the ConfigMaps (40 times) and **paged** (limit=500):
  median wall time and server CPU per LIST. apikit's LIST holds one
  ConfigMap more, kube-root-ca.crt, which its namespace controllers publish
  as kube-controller-manager does beside a kube-apiserver (here alone).
- **stored size**: one ConfigMap's value in etcd: kube-apiserver stores
  protobuf, apikit JSON.
- **binary size** and **modules**: both stripped; kube-apiserver's with its
  release's version string.
`

// runCoreMode is the benchmark's core mode: it builds what it runs, runs
// wardle --core-api and kube-apiserver o.runs times each, and reports.
func runCoreMode(ctx context.Context, o options, b *builder, work string, started time.Time) error {
	bins, progs, infos, err := b.buildPair(o, keyKube, b.wardle, b.kubeAPIServer)
	if err != nil {
		return err
	}
	sa, err := writeServiceAccountKeys(work)
	if err != nil {
		return err
	}
	r, err := newRunner(ctx, o, work, bins)
	if err != nil {
		return err
	}
	defer r.stop()
	specs := []serverSpec{
		wardleCoreSpec(progs[keyApikit], sa, strings.Fields(o.wardleArgs)),
		kubeSpec(progs[keyKube], sa, strings.Fields(o.kubeArgs)),
	}
	if o.only != "" {
		specs = filterSpecs(specs, o.only)
	}
	runs, errs, err := runAll(ctx, o.runs, specs, r.runCore, nil)
	if err != nil {
		return err
	}
	section := markdownCoreRun(coreReportInput{
		label: o.label, when: started, elapsed: time.Since(started), machine: describeMachine(),
		p: o.params, runs: o.runs, etcdVer: bins.etcdVersion, fsync: o.fsync, apikitRev: gitRevision(b.repo),
		figs: coreFigures(runs, infos), errs: errs, wardleArgs: o.wardleArgs, kubeArg: o.kubeArgs,
	})
	fmt.Println(section)
	return o.write(func(old string) string { return mergeCoreDoc(old, section) })
}
