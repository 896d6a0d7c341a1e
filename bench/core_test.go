package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigMapBody(t *testing.T) {
	for _, i := range []int{0, 7, 4999} {
		name := configMapName(i)
		var cm struct {
			APIVersion, Kind string
			Metadata         struct {
				Name, Namespace string
				Labels          map[string]string
			}
			Data map[string]string
		}
		if err := json.Unmarshal(configMapBody(name, i), &cm); err != nil {
			t.Fatalf("configMapBody(%d): %v", i, err)
		}
		if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Metadata.Name != name || cm.Metadata.Namespace != namespace {
			t.Errorf("configMapBody(%d) = %+v", i, cm)
		}
		if !strings.HasPrefix(name, configMapPrefix) || len(cm.Data) != 2 || !strings.Contains(cm.Data["settings.yaml"], "replicas: ") {
			t.Errorf("configMapBody(%d): name %q, data %v", i, name, cm.Data)
		}
	}
}

func TestCountNamed(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		ok   bool
	}{
		{`{"items":[{"metadata":{"name":"cm-00001"}},{"metadata":{"name":"kube-root-ca.crt"}},{"metadata":{"name":"cm-00002"}}]}`, 2, true},
		{`{"metadata":{"resourceVersion":"5"},"items":[]}`, 0, true},
		{`{"items":[{"metadata":{"name":"xcm-1"}}]}`, 0, true},
		{`{"items":[`, 0, false},
	} {
		n, err := countConfigMaps([]byte(tc.body))
		if (err == nil) != tc.ok || n != tc.want {
			t.Errorf("countConfigMaps(%s) = %d, %v; want %d, ok %v", tc.body, n, err, tc.want, tc.ok)
		}
	}
}

// TestCoreSpecs: both servers get the same control-plane flags, each its
// own etcd prefix (which the wipe before each run relies on), and
// kube-apiserver the ones it cannot start without.
func TestCoreSpecs(t *testing.T) {
	sa, err := writeServiceAccountKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{sa.signing, sa.public} {
		if b, err := os.ReadFile(f); err != nil || !strings.HasPrefix(string(b), "-----BEGIN ") {
			t.Fatalf("%s: %v %q", f, err, b)
		}
	}
	pki := pkiFiles{caCert: "ca.crt", servingCert: "s.crt", servingKey: "s.key"}
	wardle := wardleCoreSpec("wardle", sa, []string{"--v=2"})
	kube := kubeSpec("kube-apiserver", sa, []string{"--v=3"})
	wargs := wardle.args(1234, pki, "http://127.0.0.1:2379", "/d")
	kargs := kube.args(1234, pki, "http://127.0.0.1:2379", "/d")
	for _, f := range sa.controlPlaneFlags() {
		if !slices.Contains(wargs, f) || !slices.Contains(kargs, f) {
			t.Errorf("%s not given to both: wardle %v, kube %v", f, wargs, kargs)
		}
	}
	for _, f := range []string{"--core-api", "--v=2", "--etcd-prefix=/bench/apikit", "--secure-port=1234"} {
		if !slices.Contains(wargs, f) {
			t.Errorf("wardle lacks %s: %v", f, wargs)
		}
	}
	for _, f := range []string{"--v=3", "--etcd-prefix=" + kube.prefix, "--etcd-servers=http://127.0.0.1:2379", "--client-ca-file=ca.crt",
		"--tls-cert-file=s.crt", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=1234"} {
		if !slices.Contains(kargs, f) {
			t.Errorf("kube-apiserver lacks %s: %v", f, kargs)
		}
	}
	if kube.key != keyKube || wardle.key != keyApikit || kube.prefix == wardle.prefix {
		t.Errorf("keys %q %q, prefixes %q %q", wardle.key, kube.key, wardle.prefix, kube.prefix)
	}
	if slices.ContainsFunc(kargs, func(a string) bool { return strings.HasPrefix(a, "--enable-admission-plugins") }) {
		t.Errorf("kube-apiserver runs its default admission plugins, not %v", kargs)
	}
}

// TestRunAll: the servers alternate which goes first; a failed start is
// an error of the run, not of the benchmark; a phase's errors are kept.
func TestRunAll(t *testing.T) {
	specs := []serverSpec{{key: keyApikit}, {key: keyKube}}
	var order []string
	runs, errs, err := runAll(context.Background(), 3, specs, func(_ context.Context, s serverSpec, i int) (*serverRun, error) {
		order = append(order, s.key)
		if i == 1 && s.key == keyKube {
			return nil, errors.New("did not start")
		}
		return &serverRun{ready: time.Second, errs: []string{"list: slow"}[:min(i, 1)]}, nil
	}, func(i int, rec *runRecord) []string {
		rec.casSize = i
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{keyApikit, keyKube, keyKube, keyApikit, keyApikit, keyKube}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if len(runs) != 3 || runs[1].servers[keyKube] != nil || runs[1].servers[keyApikit] == nil || runs[2].casSize != 2 {
		t.Errorf("runs %+v", runs)
	}
	want := []string{"run 2, kube: did not start", "run 2, apikit: list: slow", "run 3, apikit: list: slow", "run 3, kube: list: slow"}
	slices.Sort(want)
	slices.Sort(errs)
	if !slices.Equal(errs, want) {
		t.Errorf("errors %q, want %q", errs, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := runAll(ctx, 2, specs, func(ctx context.Context, _ serverSpec, _ int) (*serverRun, error) {
		return nil, ctx.Err()
	}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("runAll after cancel: %v", err)
	}
}

func TestCoreFigures(t *testing.T) {
	runs := []runRecord{
		{servers: map[string]*serverRun{keyApikit: syntheticRun(0.25), keyKube: syntheticRun(1)}},
		{servers: map[string]*serverRun{keyApikit: syntheticRun(0.25), keyKube: nil}},
	}
	// apikit's GET is slower: a FAIL must show as one.
	for _, r := range runs {
		r.servers[keyApikit].get = &phase{ops: 1000, wall: time.Second, cpu: 800 * time.Millisecond}
	}
	figs := coreFigures(runs, map[string]binaryInfo{keyApikit: {size: 40e6, modules: 80}, keyKube: {size: 120e6, modules: 250}})
	if figs[0].name != "create server CPU per op" || figs[0].target == 0 {
		t.Errorf("first row %q: issue 17's targets come first", figs[0].name)
	}
	md := markdownCoreRun(coreReportInput{label: "test", when: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
		p: params{n: 1000, workers: 16, lists: 3, pageSize: 500}, runs: 2, etcdVer: "3.7.3", figs: figs,
		errs: []string{"run 2, kube: did not\nstart"}})
	for _, want := range []string{
		coreRunMarker + "\n### 2026-01-02 03:04 UTC — test",
		"| figure | apikit | kube-apiserver | apikit/kube | target | |",
		"| create server CPU per op (ms) | 0.250 | 1.000 | 0.25 | <= 0.5 | pass |",
		"| GET server CPU per op (ms) | 0.800 | 0.500 | 1.60 | <= 0.5 | FAIL |",
		"| full LIST server CPU (ms) | 12.5 | 50.0 | 0.25 | <= 0.5 | pass |",
		"| RSS idle (MiB) | 25.0 | 100.0 | 0.25 | <= 0.3 | pass |",
		"| time to ready (s) | 0.12 | 0.50 | 0.25 | <= 0.2 | FAIL |",
		"| modules linked into the binary | 80 | 250 | 0.32 |  |  |",
		"- run 2, kube: did not start",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	var create *figure
	for _, f := range figs {
		if f.name == "create server CPU per op" {
			create = f
		}
	}
	if got := create.values[keyApikit]; len(got) != 2 || math.Abs(got[1]-0.25) > 1e-9 {
		t.Errorf("apikit create CPU values %v, want 0.25 for each of 2 runs", got)
	}
}

// TestMergeCoreDoc: the core mode's runs go into a section of their own at
// the page's end, newest first, and the sample mode's rewrite of the
// page's top keeps it.
func TestMergeCoreDoc(t *testing.T) {
	page := mergeDoc("# Header\n", "", runMarker+"\n## sample run 1\n\n## Go benchmarks\n")
	one := mergeCoreDoc(page, coreRunMarker+"\n### core run 1\n")
	if !strings.HasPrefix(one, page) || !strings.Contains(one, coreSectionMarker+"\n"+coreDocHeader) || !strings.HasSuffix(one, "### core run 1\n") {
		t.Fatalf("first core run:\n%s", one)
	}
	two := mergeCoreDoc(one, coreRunMarker+"\n### core run 2\n")
	i2, i1, h := strings.Index(two, "core run 2"), strings.Index(two, "core run 1"), strings.Index(two, coreSectionMarker)
	if h < 0 || i2 < h || i1 < i2 || strings.Count(two, coreSectionMarker) != 1 {
		t.Fatalf("want the section once, run 2 above run 1:\n%s", two)
	}
	three := mergeDoc("# Header\n", two, runMarker+"\n## sample run 2\n")
	if !strings.Contains(three, "## sample run 2") || !strings.HasSuffix(three, two[strings.Index(two, runMarker):]) {
		t.Fatalf("a sample run lost the core section:\n%s", three)
	}
}

// TestCorePageSection: the page's core section starts with coreDocHeader,
// which every core run writes, so edit it in core.go, not on the page.
func TestCorePageSection(t *testing.T) {
	page, err := os.ReadFile("../docs/benchmarks.md")
	if err != nil {
		t.Skipf("no page: %v", err)
	}
	i := strings.Index(string(page), coreSectionMarker)
	if i < 0 {
		t.Skip("no core section yet")
	}
	if want := coreSectionMarker + "\n" + strings.TrimRight(coreDocHeader, "\n") + "\n\n" + coreRunMarker; !strings.HasPrefix(string(page[i:]), want) {
		t.Fatal("the core section of docs/benchmarks.md does not start with coreDocHeader and a run: edit coreDocHeader in core.go")
	}
}
