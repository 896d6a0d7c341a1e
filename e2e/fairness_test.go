package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The fairness test: user A floods the server with full LISTs of 2,000
// flunders (each with a 512-byte annotation) from 200 concurrent
// requests, while user B sends one small request at a time. A and B are
// ordinary users (client certificates from the dev CA, not in
// system:masters), allowed to read flunders by an RBAC binding, and land
// in the default configuration's global-default level, in flows of their
// own. B must get no 429 and no 5xx, and its p99 latency under the flood
// must stay within fairnessMaxRatio of its p99 alone. Then A's level is
// given a short queue (queueLengthLimit 5): A gets 429s, each with
// Retry-After, and B is still unaffected.
const (
	fairnessObjects  = 2000
	fairnessFlooders = 200
	fairnessMaxRatio = 50
	fairnessNS       = "fair"
	floodEnv         = "APIKIT_E2E_FLOOD"
)

// httpClientFor returns an HTTP client acting as the kubeconfig's user.
func httpClientFor(t testing.TB, kubeconfig string) (*http.Client, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg.Host
}

// latencies collects request durations.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func (l *latencies) p(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), l.d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// bResult is what B saw.
type bResult struct {
	lat                latencies
	n, tooMany, server atomic.Int64
}

// runB sends one GET of a flunder at a time until ctx ends.
func runB(ctx context.Context, c *http.Client, host string, res *bResult) {
	url := host + "/apis/wardle.example.com/v1beta1/namespaces/" + fairnessNS + "/flunders/f-7"
	for ctx.Err() == nil {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			if ctx.Err() == nil {
				res.server.Add(1)
			}
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res.lat.add(time.Since(start))
		res.n.Add(1)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			res.tooMany.Add(1)
		case resp.StatusCode >= 500:
			res.server.Add(1)
		}
	}
}

// flood runs A's flood in a child process (so that reading A's responses
// does not delay B's client) for d and returns its report line.
func flood(t *testing.T, kubeconfig string, d time.Duration) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFairnessFlooder$", "-test.v")
	cmd.Env = append(os.Environ(), floodEnv+"="+kubeconfig+","+d.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flooder: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "flood:") {
			return line[strings.Index(line, "flood:"):]
		}
	}
	t.Fatalf("flooder said nothing:\n%s", out)
	return ""
}

// TestFairnessFlooder is A's side of TestFairness, run in a child process;
// alone it has nothing to do.
func TestFairnessFlooder(t *testing.T) {
	spec := os.Getenv(floodEnv)
	if spec == "" {
		t.Skip("run by TestFairness")
	}
	kubeconfig, dur, _ := strings.Cut(spec, ",")
	d, err := time.ParseDuration(dur)
	if err != nil {
		t.Fatal(err)
	}
	c, host := httpClientFor(t, kubeconfig)
	url := host + "/apis/wardle.example.com/v1beta1/namespaces/" + fairnessNS + "/flunders"
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ok, tooMany, noRetryAfter, other, items atomic.Int64
	var wg sync.WaitGroup
	for range fairnessFlooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				// Uncompressed, so that the test measures what flow
				// control does for B, not how much of two cores A's
				// gzip takes: with gzip (each LIST ~7x the CPU, see
				// docs/benchmarks.md) one run measured B's p99 ratio
				// at 87 where it is 14-16 without (kube-apiserver 1.37,
				// gzip on: 111-310).
				req.Header.Set("Accept-Encoding", "identity")
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
					items.Add(n)
				case http.StatusTooManyRequests:
					tooMany.Add(1)
					if resp.Header.Get("Retry-After") == "" {
						noRetryAfter.Add(1)
					}
				default:
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("flood: ok=%d tooMany=%d noRetryAfter=%d other=%d bytes=%d", ok.Load(), tooMany.Load(), noRetryAfter.Load(), other.Load(), items.Load())
}

func floodCount(t *testing.T, report, key string) int64 {
	t.Helper()
	for _, f := range strings.Fields(report) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", key, report)
	return 0
}

// measureB runs B for d (after skip) while during runs, and returns what
// B saw.
func measureB(t *testing.T, c *http.Client, host string, skip, d time.Duration, during func()) *bResult {
	t.Helper()
	res := &bResult{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if during != nil {
		wg.Add(1)
		go func() { defer wg.Done(); during() }()
	}
	time.Sleep(skip)
	done := make(chan struct{})
	go func() { defer close(done); runB(ctx, c, host, res) }()
	time.Sleep(d)
	cancel()
	<-done
	wg.Wait()
	return res
}

func TestFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("the fairness test floods the server for a minute")
	}
	w := StartWardle(t)
	w.Kubectl("create", "clusterrole", "flunder-reader", "--verb=get,list", "--resource=flunders")
	w.Kubectl("create", "clusterrolebinding", "fairness-readers", "--clusterrole=flunder-reader", "--user=tenant-a", "--user=tenant-b")
	a := w.NewUser("tenant-a", "tenants")
	b := w.NewUser("tenant-b", "tenants")

	// 2,000 flunders with a 512-byte annotation each.
	admin, host := httpClientFor(t, w.Kubeconfig())
	note := strings.Repeat("x", 512)
	var wg sync.WaitGroup
	var createErr atomic.Value
	jobs := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				body := fmt.Sprintf(`{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":"f-%d","annotations":{"note":%q}},"spec":{"reference":"r"}}`, i, note)
				resp, err := admin.Post(host+"/apis/wardle.example.com/v1beta1/namespaces/"+fairnessNS+"/flunders", "application/json", bytes.NewBufferString(body))
				if err != nil {
					createErr.Store(err)
					continue
				}
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					createErr.Store(fmt.Errorf("create f-%d: %d %s", i, resp.StatusCode, msg))
				}
			}
		}()
	}
	for i := range fairnessObjects {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := createErr.Load(); err != nil {
		t.Fatal(err)
	}

	bc, bhost := httpClientFor(t, b.Kubeconfig)
	// Unloaded, after the server has counted the flunders (every 5 s).
	time.Sleep(6 * time.Second)
	alone := measureB(t, bc, bhost, 0, 5*time.Second, nil)
	if alone.tooMany.Load()+alone.server.Load() > 0 {
		t.Fatalf("B alone: %d 429s, %d errors", alone.tooMany.Load(), alone.server.Load())
	}

	// Loaded: A floods for 25 s; B measures from 2 s in to 2 s before
	// the end.
	var report string
	loaded := measureB(t, bc, bhost, 2*time.Second, 21*time.Second, func() { report = flood(t, a.Kubeconfig, 25*time.Second) })
	ratio := float64(loaded.lat.p(0.99)) / float64(alone.lat.p(0.99))
	t.Logf("B alone: %d requests, p50 %v, p99 %v", alone.n.Load(), alone.lat.p(0.5), alone.lat.p(0.99))
	t.Logf("B under the flood: %d requests, p50 %v, p99 %v, 429s %d, errors %d; p99 ratio %.1f",
		loaded.n.Load(), loaded.lat.p(0.5), loaded.lat.p(0.99), loaded.tooMany.Load(), loaded.server.Load(), ratio)
	t.Logf("A's %s", report)
	if loaded.tooMany.Load() > 0 || loaded.server.Load() > 0 {
		t.Errorf("B got %d 429s and %d errors under the flood", loaded.tooMany.Load(), loaded.server.Load())
	}
	if ratio > fairnessMaxRatio {
		// Measured here: 14-16 with LISTs served from the watch cache
		// (120-350 when they were read from etcd and decoded per request;
		// real kube-apiserver 1.37 shows 111-310 under this test). On
		// 2026-12-01 the same machine gave 9.9 at 43006b2 and 52 at
		// fa3425d: from c282ce7 on, the store on the embedded etcd never
		// learnt its etcd's version (its in-process client names no
		// endpoint), so every one of A's LISTs went to etcd again: A
		// completed 274-893 LISTs in 25 s, against 2,590-3,769 before.
		// With that fixed (storage/etcd3's checkProgressOrder): A 1,746-
		// 2,239 LISTs, B's ratio 2.0 and 6.6 at load 27-35 (10.3-11.6 at
		// 43006b2, load 12-26), so the bound is 50 again.
		t.Errorf("B's p99 under the flood is %.1f times its p99 alone, want at most %d", ratio, fairnessMaxRatio)
	}
	if floodCount(t, report, "ok") == 0 {
		t.Errorf("A's flood listed nothing: %s", report)
	}

	// A's level gets a short queue: A is refused, B is not.
	w.KubectlStdin(`apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenant-a}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 20
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 1, handSize: 1, queueLengthLimit: 5}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenant-a}
spec:
  priorityLevelConfiguration: {name: tenant-a}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: tenant-a}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`, "apply", "-f", "-")
	uid := strings.TrimSpace(w.Kubectl("get", "prioritylevelconfiguration", "tenant-a", "-o", "jsonpath={.metadata.uid}"))
	ac, ahost := httpClientFor(t, a.Kubeconfig)
	waitUntil(t, 10*time.Second, "A's requests to reach tenant-a", func() bool {
		resp, err := ac.Get(ahost + "/apis/wardle.example.com/v1beta1/namespaces/" + fairnessNS + "/flunders/f-1")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == uid
	})
	short := measureB(t, bc, bhost, 2*time.Second, 8*time.Second, func() { report = flood(t, a.Kubeconfig, 12*time.Second) })
	t.Logf("short queue: A's %s; B: %d requests, p99 %v, 429s %d, errors %d", report,
		short.n.Load(), short.lat.p(0.99), short.tooMany.Load(), short.server.Load())
	if floodCount(t, report, "tooMany") == 0 {
		t.Errorf("A got no 429 with a queue of 5: %s", report)
	}
	if floodCount(t, report, "noRetryAfter") > 0 {
		t.Errorf("some 429s had no Retry-After: %s", report)
	}
	if short.tooMany.Load() > 0 || short.server.Load() > 0 {
		t.Errorf("B got %d 429s and %d errors while A was refused", short.tooMany.Load(), short.server.Load())
	}
}
