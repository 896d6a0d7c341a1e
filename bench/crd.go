package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The CRD mode (-crd) runs custom resources on apikit's extensions server
// (bench/crdserver) beside k8s.io/apiextensions-apiserver run standalone, on
// one etcd: issue 14's "performance" bullet.

// apiextensionsVersion is the k8s.io/apiextensions-apiserver release
// bench/apiextensionsapiserver pins.
const apiextensionsVersion = "v0.37.2"

// keyExt is the CRD mode's peer column: the apiextensions-apiserver.
const keyExt = "apiextensions"

// crdGroup is the benchmark CRD's group, which neither server serves
// otherwise.
const crdGroup = "bench.apikit.dev"

// crdRuleMessage is the message of the CRD's CEL rule.
const crdRuleMessage = "flunderReference must start with flunder-"

// crdPath is where CRDs are created.
const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

// crdBody is the benchmark's CRD: namespaced Flunders of bench.apikit.dev/v1,
// the shape of wardle's (so that the load's bodies are the Flunder
// benchmark's), with a structural schema of a few fields, a default
// (spec.replicas, which no request sets: every write defaults it), an enum,
// one CEL rule that every write evaluates, and the status subresource.
const crdBody = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"flunders.` + crdGroup + `"},
"spec":{"group":"` + crdGroup + `","scope":"Namespaced",
 "names":{"plural":"flunders","singular":"flunder","kind":"Flunder","listKind":"FlunderList"},
 "versions":[{"name":"v1","served":true,"storage":true,
  "subresources":{"status":{}},
  "schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","required":["flunderReference"],
    "properties":{
     "flunderReference":{"type":"string","maxLength":64},
     "referenceType":{"type":"string","enum":["Flunder","Fischer"]},
     "replicas":{"type":"integer","minimum":0,"maximum":10,"default":1}},
    "x-kubernetes-validations":[{"rule":"self.flunderReference.startsWith('flunder-')","message":"` + crdRuleMessage + `"}]},
   "status":{"type":"object","properties":{"phase":{"type":"string"}}}}}}}]}}`

// crdFlunders are the CRD's custom resources; crdObjects adds their setup.
var crdFlunders = objectType{
	apiVersion: crdGroup + "/v1", kind: "Flunder",
	collection: "/apis/" + crdGroup + "/v1/namespaces/" + namespace + "/flunders",
	stored:     "/" + crdGroup + "/flunders/",
}

// crdObjects are crdFlunders, served once establish has made the CRD.
func crdObjects() objectType {
	t := crdFlunders
	t.setup = establish
	return t
}

// probeName is the custom resource establish creates and deletes.
const probeName = "flunder-probe"

// setupTimes are the times from sending the CRD to its custom resources
// served: LISTed (the first 200 of a LIST), and created (the first 201 of
// a create; the apiextensions-apiserver holds creates for 2 s after a CRD
// became Established, for HA servers that may not have seen it yet).
type setupTimes struct{ served, created time.Duration }

// pollInterval is how often establish asks: the times it measures are
// tens of milliseconds on apikit.
const pollInterval = 2 * time.Millisecond

// establish creates the CRD, then LISTs its custom resources every
// pollInterval until the server serves them, then tries to create one as
// often until the server takes it; it checks that the server defaulted it and refuses
// one breaking the CEL rule, deletes it, and returns the times from
// sending the CRD to the LIST's 200 and the create's 201.
func establish(ctx context.Context, c *apiClient) (setupTimes, error) {
	var buf bytes.Buffer
	started := time.Now()
	if err := c.do(ctx, http.MethodPost, crdPath, []byte(crdBody), http.StatusCreated, &buf); err != nil {
		return setupTimes{}, fmt.Errorf("creating the CRD: %w", err)
	}
	served, err := poll(ctx, 2*time.Minute, pollInterval, func() error {
		return c.do(ctx, http.MethodGet, crdFlunders.collection, nil, http.StatusOK, &buf)
	})
	if err != nil {
		return setupTimes{}, fmt.Errorf("the CRD's custom resources: %w", err)
	}
	probe := crdFlunders.createBody(probeName, 0)
	created, err := poll(ctx, 2*time.Minute, pollInterval, func() error {
		return c.do(ctx, http.MethodPost, crdFlunders.collection, probe, http.StatusCreated, &buf)
	})
	if err != nil {
		return setupTimes{}, fmt.Errorf("the CRD's first custom resource: %w", err)
	}
	times := setupTimes{served: served.Sub(started), created: created.Sub(started)}
	// Both servers are to do the same work on every write: default, and
	// run the rule.
	if err := checkDefaulted(buf.Bytes()); err != nil {
		return setupTimes{}, err
	}
	bad := bytes.Replace(probe, []byte(`"flunder-ref-`), []byte(`"other-ref-`), 1)
	err = c.do(ctx, http.MethodPost, crdFlunders.collection, bad, http.StatusUnprocessableEntity, &buf)
	if err != nil {
		return setupTimes{}, fmt.Errorf("a custom resource breaking the CEL rule: %w", err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(crdRuleMessage)) {
		return setupTimes{}, fmt.Errorf("a custom resource breaking the CEL rule: refused without the rule's message: %s", buf.Bytes())
	}
	if err := c.do(ctx, http.MethodDelete, crdFlunders.collection+"/"+probeName, nil, http.StatusOK, &buf); err != nil {
		return setupTimes{}, fmt.Errorf("deleting the first custom resource: %w", err)
	}
	return times, nil
}

// checkDefaulted checks that a custom resource as served has the schema's
// default for spec.replicas, which the benchmark's bodies never set.
func checkDefaulted(body []byte) error {
	var cr struct {
		Spec struct {
			Replicas *int64 `json:"replicas"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &cr); err != nil {
		return fmt.Errorf("decoding the first custom resource: %w", err)
	}
	if cr.Spec.Replicas == nil || *cr.Spec.Replicas != 1 {
		return fmt.Errorf("the first custom resource has no spec.replicas defaulted to 1: %s", body)
	}
	return nil
}

// poll calls try every interval until it succeeds, and returns when it did;
// the last error when limit has passed.
func poll(ctx context.Context, limit, interval time.Duration, try func() error) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for {
		err := try()
		if err == nil {
			return time.Now(), nil
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("not within %v: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// crdServerSpec is bench/crdserver: apikit's extensions server alone, as
// the peer runs. Its flags are kube-apiserver's, as wardle's.
func crdServerSpec(bin string, extra []string) serverSpec {
	s := wardleSpec(bin, extra)
	s.title = "apikit bench/crdserver (server/extensions)"
	base := s.args
	s.args = func(port int, pki pkiFiles, etcd, dir string) []string {
		args := base(port, pki, etcd, dir)
		for i, a := range args {
			if strings.HasPrefix(a, "--data-dir=") {
				args[i] = "--data-dir=" + filepath.Join(dir, "crdserver")
			}
		}
		return args
	}
	return s
}

// apiextensionsSpec is k8s.io/apiextensions-apiserver as
// bench/apiextensionsapiserver builds it, with the sample-apiserver's flags.
func apiextensionsSpec(bin string, extra []string) serverSpec {
	s := sampleSpec(bin, extra)
	s.key, s.title, s.prefix = keyExt, "k8s.io/apiextensions-apiserver "+apiextensionsVersion, "/bench/apiextensions"
	base := s.args
	s.args = func(port int, pki pkiFiles, etcd, dir string) []string {
		args := base(port, pki, etcd, dir)
		for i, a := range args {
			switch {
			case strings.HasPrefix(a, "--etcd-prefix="):
				args[i] = "--etcd-prefix=" + s.prefix
			case strings.HasPrefix(a, "--cert-dir="):
				args[i] = "--cert-dir=" + filepath.Join(dir, "apiextensions-certs")
			}
		}
		return args
	}
	return s
}

// crdTargets are issue 14's targets for the ratio apikit/apiextensions-
// apiserver, by figure name; the other figures are for information.
var crdTargets = map[string]float64{
	"create server CPU per op": 0.5,
	"update server CPU per op": 0.5,
	"delete server CPU per op": 0.5,
	"GET server CPU per op":    0.3,
	"full LIST server CPU":     0.2,
	"RSS with the objects":     0.5,
	crdServedFigure:            0.5,
}

// crdServedFigure and crdCreatedFigure name the setup's times.
const (
	crdServedFigure  = "CRD create -> custom resources served (LIST 200)"
	crdCreatedFigure = "CRD create -> first custom resource created"
)

// crdFigures are the Flunder benchmark's rows with issue 14's targets, and
// the times to serve the CRD's resources; rows with a target first.
func crdFigures(runs []runRecord, bins map[string]binaryInfo) []*figure {
	figs := figures(runs, bins)
	for _, row := range []struct {
		name string
		pick func(setupTimes) time.Duration
	}{
		{crdServedFigure, func(t setupTimes) time.Duration { return t.served }},
		{crdCreatedFigure, func(t setupTimes) time.Duration { return t.created }},
	} {
		figs = append(figs, &figure{name: row.name, unit: "s", format: "%.2f", values: valuesOf(runs, func(s *serverRun) (float64, bool) {
			return row.pick(s.setup).Seconds(), row.pick(s.setup) > 0
		})})
	}
	for _, f := range figs {
		f.target = crdTargets[f.name]
	}
	slices.SortStableFunc(figs, func(a, b *figure) int {
		return cmp.Compare(boolInt(a.target == 0), boolInt(b.target == 0))
	})
	return figs
}

// crdRunMarker starts every CRD-mode run's section in docs/benchmarks.md.
const crdRunMarker = "<!-- bench:crd-run -->"

// crdSectionMarker starts the CRD mode's part of docs/benchmarks.md, after
// the Flunder runs: the Flunder mode keeps everything after its own first
// run, so the modes never overwrite each other.
const crdSectionMarker = "<!-- bench:crd -->"

// extPeer is the CRD mode's peer column.
var extPeer = peer{keyExt, "apiextensions-apiserver", "apiextensions"}

// markdownCRDRun is one CRD-mode run's section of docs/benchmarks.md.
func markdownCRDRun(in reportInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### %s\n\n", crdRunMarker, runTitle(in.when, in.label))
	b.WriteString(in.machine.line())
	fmt.Fprintf(&b, "- %s; etcd %s (one process for both servers, fsync %s); apikit %s (bench/crdserver); k8s.io/apiextensions-apiserver %s\n",
		in.machine.goVersion, in.etcdVer, fsyncText(in.fsync), in.apikitRev, apiextensionsVersion)
	fmt.Fprintf(&b, "- N=%d custom resources, %d workers, JSON over HTTP/2, %d runs (medians), %d LISTs per run (paged: limit=%d), %d watch events; the run took %v\n",
		in.p.n, in.p.workers, in.runs, in.p.lists, in.p.pageSize, in.p.watchEvents, in.elapsed.Round(time.Second))
	b.WriteString(identityLine(in.p))
	if in.wardleArgs != "" || in.sampleArgs != "" {
		fmt.Fprintf(&b, "- extra flags: crdserver `%s`; apiextensions-apiserver `%s`\n", in.wardleArgs, in.sampleArgs)
	}
	b.WriteString("\n")
	b.WriteString(figureTable(in.figs, extPeer))
	b.WriteString("\n")
	b.WriteString(spreadTable(in.figs, extPeer))
	b.WriteString(errorList(in.errs))
	return b.String()
}

// mergeSection puts run, the newest, first in the section of old (the
// page's contents) that starts with sectionMarker, under header, keeping
// its earlier runs (each starts with runMarker) and everything after them;
// a page without the section gets it at its end. The header is written
// anew each time, so that it describes the code that made the newest run.
func mergeSection(old, sectionMarker, runMarker, header, run string) string {
	before, earlier := old, ""
	if i := strings.Index(old, sectionMarker); i >= 0 {
		before = old[:i]
		if j := strings.Index(old[i:], runMarker); j >= 0 {
			earlier = old[i+j:]
		}
	}
	doc := strings.TrimRight(before, "\n") + "\n\n" + sectionMarker + "\n" +
		strings.TrimRight(header, "\n") + "\n\n" + strings.TrimRight(run, "\n") + "\n"
	if earlier != "" {
		doc += "\n" + strings.TrimRight(earlier, "\n") + "\n"
	}
	return doc
}

// crdDocHeader introduces the CRD mode's runs in docs/benchmarks.md.
const crdDocHeader = `## CustomResourceDefinitions beside k8s.io/apiextensions-apiserver ` + apiextensionsVersion + `

Issue 14's performance check: custom resources on apikit's extensions server
(server/extensions alone, as ` + "`bench/crdserver`" + ` runs it with kube-apiserver's
flags: RBAC, flow control and admission in its filter chain; the runs
whose apikit line names ` + "`examples/chain`" + ` measured the same server with two
small servers of a group of notes each behind it) beside k8s.io/apiextensions-apiserver ` + apiextensionsVersion + ` run standalone
(bench/apiextensionsapiserver: its own server with the sample-apiserver's
three changes: client certificates only, always-allow authorization, a fake
core API for its admission plugins and flow control), one after the other
against one etcd. Run it (builds bench/crdserver from the working tree, the
apiextensions-apiserver once per version; ~15 minutes cold):

` + "```sh" + `
cd bench && go run . -crd -out ../docs/benchmarks.md -label "what changed"
` + "```" + `

` + "`-apiextensions-args`" + ` adds the apiextensions-apiserver's flags, ` + "`-wardle-args`" + `
bench/crdserver's; ` + "`-n`" + `, ` + "`-workers`" + `, ` + "`-runs`" + `, ` + "`-lists`" + `, ` + "`-page`" + `, ` + "`-only`" + `, ` + "`-keep`" + ` as above.

Each server starts fresh on an empty etcd prefix; once it is ready the
benchmark creates one CRD (` + "`flunders.bench.apikit.dev`" + `: namespaced, one version
v1 with a structural schema of three spec fields, a default, an enum, one
CEL rule over spec, the status subresource) and measures **CRD create ->
custom resources served**: from sending the CRD to the first 200 of a LIST
of its custom resources, retried every 2 ms; then **-> first custom
resource created**: to the first 201 of a create, retried as often (for
information: the apiextensions-apiserver holds every create for 2 s while
its CRD has been Established for less than 2 s, so that the other servers
of an HA control plane have seen it; a LIST is not held). It checks that
the custom resource came back with the schema's default and that one
breaking the CEL rule is refused with the rule's message, on both. Then the Flunder benchmark's
load, phase by phase, with the same bodies as bench.apikit.dev/v1 Flunders
(every write defaults spec.replicas and evaluates the CEL rule): N creates,
GETs, full and paged LISTs (**RSS with the objects** after them), the watch
phase, updates, server-side applies and deletes; server CPU per op from
/proc as above.
`

// runCRDMode is the benchmark's CRD mode: it builds what it runs, runs
// bench/crdserver and the apiextensions-apiserver o.runs times each with the
// CRD's custom resources, and reports.
func runCRDMode(ctx context.Context, o options, b *builder, work string, started time.Time) error {
	bins, progs, infos, err := b.buildPair(o, keyExt, b.crdServer, func() (string, error) {
		return b.kubeProgram(kubeProgram{
			what: "k8s.io/apiextensions-apiserver " + apiextensionsVersion, dir: filepath.Join(b.repo, "bench", "apiextensionsapiserver"),
			files: []string{"go.mod", "go.sum", "main.go"}, pkg: ".", name: "apiextensionsapiserver-" + apiextensionsVersion,
			gitVersion: sampleGitVer, gitMajor: sampleGitMajor, gitMinor: sampleGitMinor, cold: "~15 minutes",
		})
	})
	if err != nil {
		return err
	}
	r, err := newRunner(ctx, o, work, bins)
	if err != nil {
		return err
	}
	defer r.stop()
	specs := []serverSpec{
		crdServerSpec(progs[keyApikit], strings.Fields(o.wardleArgs)),
		apiextensionsSpec(progs[keyExt], strings.Fields(o.extArgs)),
	}
	if o.only != "" {
		specs = filterSpecs(specs, o.only)
	}
	runs, errs, err := runAll(ctx, o.runs, specs, func(ctx context.Context, spec serverSpec, runNo int) (*serverRun, error) {
		return r.runObjects(ctx, spec, runNo, crdObjects())
	}, nil)
	if err != nil {
		return err
	}
	section := markdownCRDRun(reportInput{
		label: o.label, when: started, elapsed: time.Since(started), machine: describeMachine(),
		p: o.params, runs: o.runs, etcdVer: bins.etcdVersion, fsync: o.fsync, apikitRev: gitRevision(b.repo),
		figs: crdFigures(runs, infos), errs: errs, wardleArgs: o.wardleArgs, sampleArgs: o.extArgs,
	})
	fmt.Println(section)
	return o.write(func(old string) string {
		return mergeSection(old, crdSectionMarker, crdRunMarker, crdDocHeader, section)
	})
}
