package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		r, target float64
		higher    bool
		want      string
	}{
		{0.4, 0.5, false, "pass"},
		{0.5, 0.5, false, "pass"},
		{0.6, 0.5, false, "FAIL"},
		{1.6, 1.5, true, "pass"},
		{1.4, 1.5, true, "FAIL"},
		{math.NaN(), 1.5, true, "n/a"},
		{1, 0, true, ""},
	} {
		if got := judge(tc.r, tc.target, tc.higher); got != tc.want {
			t.Errorf("judge(%v, %v, %v) = %q, want %q", tc.r, tc.target, tc.higher, got, tc.want)
		}
	}
	if got := targetText(0.15, false); got != "<= 0.15" {
		t.Errorf("targetText = %q", got)
	}
	if got := targetText(3, true); got != ">= 3" {
		t.Errorf("targetText = %q", got)
	}
}

// syntheticRun is a server run whose apikit figures are a fraction of the
// sample's.
func syntheticRun(scale float64) *serverRun {
	d := func(x float64) time.Duration { return time.Duration(x * scale * float64(time.Second)) }
	ph := func(wall, cpu float64) *phase { return &phase{ops: 1000, wall: d(wall), cpu: d(cpu)} }
	return &serverRun{
		ready: d(0.5), idleRSS: int64(100 * scale * (1 << 20)), loadedRSS: int64(180 * scale * (1 << 20)),
		create: ph(1, 1), get: ph(0.5, 0.5), update: ph(1, 1), apply: ph(2, 2.4), delete: ph(1, 1),
		list:  &listPhase{walls: []time.Duration{d(0.05), d(0.06), d(0.07)}, cpu: d(0.15), bytes: 1000, wire: int(4096 * scale)},
		paged: &listPhase{walls: []time.Duration{d(0.1)}, cpu: d(0.05), bytes: 1000, pages: 2},
		watch: []time.Duration{d(0.01), d(0.02)}, valueSize: 300,
	}
}

func TestFigures(t *testing.T) {
	runs := []runRecord{
		{servers: map[string]*serverRun{keyApikit: syntheticRun(0.25), keySample: syntheticRun(1)}, cas: &casResult{ops: 1000, elapsed: time.Second / 4}, casSize: 300},
		{servers: map[string]*serverRun{keyApikit: syntheticRun(0.25), keySample: nil}},
	}
	figs := figures(runs, map[string]binaryInfo{keyApikit: {size: 20e6, modules: 50}, keySample: {size: 80e6, modules: 100}})
	byName := map[string]*figure{}
	for _, f := range figs {
		byName[f.name] = f
	}
	check := func(name string, wantRatio float64, wantVerdict string) {
		t.Helper()
		f := byName[name]
		if f == nil {
			t.Fatalf("no figure %q", name)
		}
		if r := f.ratio(); math.Abs(r-wantRatio) > 1e-9 {
			t.Errorf("%s: ratio %v, want %v", name, r, wantRatio)
		}
		if v := f.verdict(); v != wantVerdict {
			t.Errorf("%s: verdict %q, want %q", name, v, wantVerdict)
		}
	}
	// apikit's operations take a quarter of the time: 4x the throughput.
	check("create throughput", 4, "pass")
	check("create server CPU per op", 0.25, "pass")
	check("GET server CPU per op", 0.25, "FAIL")
	check("apply throughput", 4, "")
	check("apply server CPU per op", 0.25, "pass")
	check("full LIST bytes on the wire (gzip when served so)", 0.25, "")
	if got := byName["apply server CPU per op"].medianOf(keySample); math.Abs(got-2.4) > 1e-9 {
		t.Errorf("sample apply CPU per op %v ms, want 2.4", got)
	}
	check("full LIST wall time", 0.25, "FAIL")
	check("RSS idle", 0.25, "pass")
	check("time to ready", 0.25, "pass")
	check("stripped binary size", 0.25, "pass")
	check("modules linked into the binary", 0.5, "pass")
	if got := byName["create throughput"].values[keyApikit]; len(got) != 2 {
		t.Errorf("apikit create throughput has %d values, want one per run", len(got))
	}
	if got := byName["full LIST wall time"].medianOf(keySample); math.Abs(got-60) > 1e-9 {
		t.Errorf("sample full LIST median %v ms, want 60", got)
	}

	e := etcdFiguresOf(runs, figs)
	if math.Abs(e.share[keyApikit]-1) > 1e-9 || math.Abs(e.share[keySample]-0.25) > 1e-9 {
		t.Errorf("etcd shares %v, want apikit 1, sample 0.25", e.share)
	}

	in := reportInput{label: "test", when: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), p: params{n: 1000, workers: 16, lists: 3, pageSize: 500, watchEvents: 2},
		runs: 2, etcdVer: "3.7.3", figs: figs, etcd: e, errs: []string{"run 2, sample: broke\nbadly"}}
	md := markdownRun(in)
	for _, want := range []string{runMarker, "## 2026-01-02 03:04 UTC — test", "| create throughput (/s) | 4000 | 1000 | 4.00 | >= 1.5 | pass |",
		"| apply server CPU per op (ms) | 0.600 | 2.400 | 0.25 | <= 0.5 | pass |", "raw etcd compare-and-put", "- run 2, sample: broke badly"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "-identity") {
		t.Errorf("a run asking for gzip says -identity:\n%s", md)
	}
	in.p.identity = true
	if md := markdownRun(in); !strings.Contains(md, "Accept-Encoding: identity") {
		t.Errorf("a run with -identity does not say so:\n%s", md)
	}
}

func TestMergeDoc(t *testing.T) {
	first := mergeDoc("# Header\n", "", runMarker+"\n## run 1\n")
	if !strings.HasPrefix(first, "# Header\n\n"+runMarker+"\n## run 1\n") {
		t.Fatalf("first doc:\n%s", first)
	}
	second := mergeDoc("# New header\n", first, runMarker+"\n## run 2\n")
	if strings.Contains(second, "# Header") || !strings.HasPrefix(second, "# New header") {
		t.Fatalf("the header was not replaced:\n%s", second)
	}
	i2, i1 := strings.Index(second, "## run 2"), strings.Index(second, "## run 1")
	if i2 < 0 || i1 < 0 || i2 > i1 {
		t.Fatalf("want run 2 above run 1:\n%s", second)
	}
}

func TestProcField(t *testing.T) {
	b := []byte("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n")
	if got := procField(b, "model name"); got != "AMD EPYC 7B13" {
		t.Fatalf("procField = %q", got)
	}
	if got := procField(b, "missing"); got != "" {
		t.Fatalf("procField(missing) = %q", got)
	}
}

// TestPageHeader: docs/benchmarks.md starts with docHeader, which every run
// writes over it, so that the method text the page shows is the harness's.
func TestPageHeader(t *testing.T) {
	page, err := os.ReadFile("../docs/benchmarks.md")
	if err != nil {
		t.Skipf("no page: %v", err)
	}
	if want := strings.TrimRight(docHeader, "\n") + "\n\n" + runMarker; !strings.HasPrefix(string(page), want) {
		t.Fatal("docs/benchmarks.md does not start with docHeader and a run: edit docHeader in report.go, not the page's top")
	}
}
