package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCRDBodies checks that the CRD is valid JSON of the resource the load
// creates, and that every body the load sends it passes the CRD's schema
// and CEL rule (as far as the rule's prefix and the length limit go), so
// that no phase measures refusals.
func TestCRDBodies(t *testing.T) {
	var crd struct {
		Metadata struct{ Name string } `json:"metadata"`
		Spec     struct {
			Group string `json:"group"`
			Names struct {
				Plural, Kind string
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Validations []struct{ Rule, Message string } `json:"x-kubernetes-validations"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(crdBody), &crd); err != nil {
		t.Fatalf("the CRD is not JSON: %v", err)
	}
	s := crd.Spec
	if crd.Metadata.Name != s.Names.Plural+"."+s.Group || len(s.Versions) != 1 {
		t.Fatalf("CRD %s: names %+v, %d versions", crd.Metadata.Name, s.Names, len(s.Versions))
	}
	if got := "/apis/" + s.Group + "/" + s.Versions[0].Name + "/namespaces/" + namespace + "/" + s.Names.Plural; got != crdFlunders.collection {
		t.Fatalf("the CRD serves %s, the load uses %s", got, crdFlunders.collection)
	}
	if crdFlunders.apiVersion != s.Group+"/"+s.Versions[0].Name || crdFlunders.kind != s.Names.Kind {
		t.Fatalf("the load's objects are %s %s", crdFlunders.apiVersion, crdFlunders.kind)
	}
	vs := s.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Validations
	if len(vs) != 1 || vs[0].Message != crdRuleMessage || !strings.Contains(vs[0].Rule, "startsWith('flunder-')") {
		t.Fatalf("the CRD's rules: %+v", vs)
	}

	ref := regexp.MustCompile(`^flunder-.{0,56}$`)
	for _, b := range [][]byte{
		crdFlunders.createBody(flunderName(99999), 99999),
		crdFlunders.updateBody(flunderName(99999), 99999, "7"),
		crdFlunders.applyBody(flunderName(99999), 99999),
		crdFlunders.createBody(watchName(99999), 99999),
	} {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Spec       struct {
				FlunderReference string `json:"flunderReference"`
				ReferenceType    string `json:"referenceType"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if o.APIVersion != crdFlunders.apiVersion || o.Kind != "Flunder" || !ref.MatchString(o.Spec.FlunderReference) {
			t.Errorf("%s would be refused by the CRD", b)
		}
		if o.Spec.ReferenceType != "" && o.Spec.ReferenceType != "Flunder" && o.Spec.ReferenceType != "Fischer" {
			t.Errorf("%s: referenceType outside the enum", b)
		}
	}
}

func TestCheckDefaulted(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"spec":{"flunderReference":"flunder-1","replicas":1}}`, true},
		{`{"spec":{"flunderReference":"flunder-1"}}`, false},
		{`{"spec":{"replicas":2}}`, false},
		{`{"spec":`, false},
	} {
		if err := checkDefaulted([]byte(tc.body)); (err == nil) != tc.ok {
			t.Errorf("checkDefaulted(%s) = %v, want ok %v", tc.body, err, tc.ok)
		}
	}
}

// crdServer is a fake server of the CRD: custom resources are not found
// until notFound LISTs have asked, then LISTed; their creates are refused
// (as the apiextensions-apiserver holds them) until holdCreates more have
// asked, then created and defaulted; a resource breaking the rule is
// refused with its message.
type crdServer struct {
	mu                    sync.Mutex
	notFound, holdCreates int
	noDefault             bool
	crds, crs, lists      int
	deleted               []string
	ruleRefuse            bool
}

func (f *crdServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == crdPath:
		f.crds++
		w.WriteHeader(http.StatusCreated)
		io.Copy(w, r.Body)
	case r.Method == http.MethodGet && r.URL.Path == crdFlunders.collection:
		if f.crds == 0 || f.notFound > 0 {
			f.notFound--
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
			return
		}
		f.lists++
		fmt.Fprint(w, `{"metadata":{},"items":[]}`)
	case r.Method == http.MethodPost && r.URL.Path == crdFlunders.collection:
		if f.lists == 0 || f.holdCreates > 0 {
			f.holdCreates--
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
			return
		}
		var o map[string]any
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		spec := o["spec"].(map[string]any)
		if ref, _ := spec["flunderReference"].(string); !strings.HasPrefix(ref, "flunder-") {
			w.WriteHeader(http.StatusUnprocessableEntity)
			if f.ruleRefuse {
				fmt.Fprintf(w, `{"kind":"Status","message":"Flunder %q is invalid: spec: Invalid value: \"object\": %s"}`, "x", crdRuleMessage)
			}
			return
		}
		if !f.noDefault {
			spec["replicas"] = 1
		}
		f.crs++
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(o)
	case r.Method == http.MethodDelete:
		f.deleted = append(f.deleted, r.URL.Path)
		fmt.Fprint(w, `{}`)
	default:
		http.Error(w, "no", http.StatusNotFound)
	}
}

func newCRDClient(t *testing.T, f *crdServer) *apiClient {
	t.Helper()
	ts := httptest.NewUnstartedServer(f)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	c := newAPIClient(ts.URL, &tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs})
	t.Cleanup(c.close)
	return c
}

func TestEstablish(t *testing.T) {
	f := &crdServer{notFound: 3, holdCreates: 5, ruleRefuse: true}
	c := newCRDClient(t, f)
	started := time.Now()
	took, err := establish(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// Five creates held after the LIST's 200, pollInterval apart.
	if took.served <= 0 || took.created < took.served+4*pollInterval || took.created > time.Since(started) {
		t.Fatalf("establish took %+v, want 0 < served < created - 4 intervals, created <= %v", took, time.Since(started))
	}
	if f.crds != 1 || f.crs != 1 || f.lists != 1 || f.notFound != 0 || f.holdCreates != 0 {
		t.Fatalf("%d CRDs, %d custom resources created, %d LISTs, %d LIST and %d create refusals left", f.crds, f.crs, f.lists, f.notFound, f.holdCreates)
	}
	if want := crdFlunders.collection + "/" + probeName; len(f.deleted) != 1 || f.deleted[0] != want {
		t.Fatalf("deleted %v, want %s", f.deleted, want)
	}

	for name, f := range map[string]*crdServer{
		"no default":                   {noDefault: true, ruleRefuse: true},
		"rule refused without message": {},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := establish(context.Background(), newCRDClient(t, f)); err == nil {
				t.Fatal("establish succeeded")
			}
		})
	}
}

func TestPollGivesUp(t *testing.T) {
	tries := 0
	_, err := poll(context.Background(), 30*time.Millisecond, time.Millisecond, func() error {
		tries++
		return fmt.Errorf("try %d", tries)
	})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("try %d", tries)) || tries < 2 {
		t.Fatalf("poll = %v after %d tries", err, tries)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := poll(ctx, time.Minute, time.Millisecond, func() error { return fmt.Errorf("no") }); err != context.Canceled {
		t.Fatalf("poll with a canceled context = %v", err)
	}
}

func TestCRDFigures(t *testing.T) {
	ext, api := syntheticRun(1), syntheticRun(0.25)
	ext.setup, api.setup = setupTimes{served: time.Second, created: 3 * time.Second}, setupTimes{served: 50 * time.Millisecond, created: 100 * time.Millisecond}
	runs := []runRecord{{servers: map[string]*serverRun{keyApikit: api, keyExt: ext}}}
	figs := crdFigures(runs, map[string]binaryInfo{keyApikit: {size: 20e6, modules: 50}, keyExt: {size: 80e6, modules: 100}})
	seenUntargeted := false
	byName := map[string]*figure{}
	for _, f := range figs {
		byName[f.name] = f
		if f.target == 0 {
			seenUntargeted = true
		} else if seenUntargeted {
			t.Errorf("%s has a target but comes after rows without", f.name)
		}
		if want := crdTargets[f.name]; f.target != want {
			t.Errorf("%s: target %v, want %v", f.name, f.target, want)
		}
	}
	for name := range crdTargets {
		if byName[name] == nil {
			t.Errorf("no row %q", name)
		}
	}
	served, created := byName[crdServedFigure], byName[crdCreatedFigure]
	if r := ratio(served.medianOf(keyApikit), served.medianOf(keyExt)); r != 0.05 {
		t.Errorf("served ratio %v, want 0.05", r)
	}
	if created == nil || created.target != 0 || created.medianOf(keyExt) != 3 {
		t.Errorf("the created row: %+v", created)
	}
	md := markdownCRDRun(reportInput{when: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC), runs: 1, figs: figs})
	for _, want := range []string{
		crdRunMarker + "\n### 2026-12-01 20:00 UTC",
		"| figure | apikit | apiextensions-apiserver | apikit/apiextensions | target | |",
		"| " + crdServedFigure + " (s) | 0.05 | 1.00 | 0.05 | <= 0.5 | pass |",
		"| " + crdCreatedFigure + " (s) | 0.10 | 3.00 | 0.03 |  |  |",
		"| create server CPU per op (ms) | 0.250 | 1.000 | 0.25 | <= 0.5 | pass |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the run's section lacks %q:\n%s", want, md)
		}
	}
}

func TestMergeSection(t *testing.T) {
	const sec, run = "<!-- bench:x -->", "<!-- bench:x-run -->"
	flunderPage := "# Benchmarks\n\n<!-- bench:run -->\n## flunders\n"
	first := mergeSection(flunderPage, sec, run, "## X\n", run+"\n### one\n")
	if want := flunderPage + "\n" + sec + "\n## X\n\n" + run + "\n### one\n"; first != want {
		t.Fatalf("first run:\n%s\nwant\n%s", first, want)
	}
	// The header is written anew; the earlier run stays, after the new.
	second := mergeSection(first, sec, run, "## X, new\n", run+"\n### two\n")
	if want := flunderPage + "\n" + sec + "\n## X, new\n\n" + run + "\n### two\n\n" + run + "\n### one\n"; second != want {
		t.Fatalf("second run:\n%s\nwant\n%s", second, want)
	}
	// The core mode's section and the CRD mode's keep each other.
	withCore := mergeCoreDoc(second, coreRunMarker+"\n### core one\n")
	third := mergeSection(withCore, sec, run, "## X\n", run+"\n### three\n")
	again := mergeCoreDoc(third, coreRunMarker+"\n### core two\n")
	for _, want := range []string{"## flunders", "### one", "### two", "### three", "### core one", "### core two"} {
		if strings.Count(again, want+"\n") != 1 {
			t.Errorf("%q is not once in:\n%s", want, again)
		}
	}
	if i, j := strings.Index(again, "### three"), strings.Index(again, "### two"); i > j {
		t.Errorf("the newest CRD run is not first:\n%s", again)
	}
	// The Flunder mode keeps the sections when it adds a run.
	if got := mergeDoc("# Benchmarks\n", again, "<!-- bench:run -->\n## newer\n"); !strings.Contains(got, "### three") || !strings.Contains(got, "### core two") || !strings.Contains(got, "## flunders") {
		t.Fatalf("mergeDoc lost a section:\n%s", got)
	}
}
