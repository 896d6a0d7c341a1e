package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aggregation is the examples/aggregated aggregator in front of a wardle
// started on its own, as docs/aggregation.md runs them: the aggregator
// first (it makes the front-proxy CA wardle trusts), then wardle, which
// reviews tokens and access with the aggregator (--authentication-kubeconfig,
// --authorization-kubeconfig) and trusts its front-proxy certificate.
type aggregation struct {
	agg, backend *Wardle
	auditLog     string
}

// startAggregation starts both; the aggregator knows alice and bob by
// static tokens.
func startAggregation(t *testing.T) *aggregation {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token-0123456789,alice,u-alice,devs\nbob-token-0123456789,bob,u-bob,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	backend := &Wardle{t: t, DataDir: t.TempDir(), Port: freePort(t)}
	agg := &Wardle{t: t, DataDir: t.TempDir(), Port: freePort(t), Binary: "aggregated", Args: []string{
		"--storage-backend=memory", "--token-auth-file=" + tokens,
		fmt.Sprintf("--service-endpoint=wardle/api=127.0.0.1:%d", backend.Port),
		"--wardle-ca-file=" + filepath.Join(backend.DataDir, "pki", "ca.crt"),
	}}
	agg.Start()
	t.Cleanup(agg.Stop)
	a := &aggregation{agg: agg, backend: backend, auditLog: filepath.Join(dir, "backend-audit.log")}
	backend.Args = []string{
		"--requestheader-client-ca-file=" + filepath.Join(agg.DataDir, "pki", "front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--authentication-kubeconfig=" + agg.Kubeconfig(),
		"--authorization-kubeconfig=" + agg.Kubeconfig(),
		// No --authentication-skip-lookup: the aggregator serves no
		// ConfigMaps, and wardle must start anyway.
		"--audit-log-path=" + a.auditLog,
	}
	backend.Start()
	t.Cleanup(backend.Stop)
	return a
}

// available returns the Available condition of an APIService as
// "status reason".
func (a *aggregation) available(name string) string {
	out, _, err := a.agg.kubectlRaw(context.Background(), "get", "apiservice", name,
		"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}`)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// auditEvents reads the backend's audit log.
func (a *aggregation) auditEvents(t *testing.T) []auditEvent {
	t.Helper()
	return readAudit(t, a.auditLog)
}

// readAudit reads a server's audit log (--audit-log-path).
func readAudit(t *testing.T, path string) []auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

type auditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

const aggFlunder = `apiVersion: wardle.example.com/v1beta1
kind: Flunder
metadata:
  name: %s
spec:
  flunderReference: %s
`

// TestAggregation: kubectl through the aggregator reaches wardle, started
// on its own: CRUD, watch and --chunk-size; wardle sees the real user; a
// client cannot name a user in X-Remote-* headers; a stopped wardle makes
// its APIServices unavailable within seconds and requests answer 503 at
// once; a restarted wardle serves again without restarting the aggregator.
func TestAggregation(t *testing.T) {
	a := startAggregation(t)
	agg, backend := a.agg, a.backend

	t.Run("registered and available", func(t *testing.T) {
		took := waitUntil(t, 15*time.Second, "v1beta1.wardle.example.com available", func() bool {
			return a.available("v1beta1.wardle.example.com") == "True Passed" && a.available("v1alpha1.wardle.example.com") == "True Passed"
		})
		t.Logf("available %v after wardle was ready", took)
		out := agg.Kubectl("get", "apiservices", "--no-headers")
		rows := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 3 {
				rows[strings.Join(f[:3], " ")] = true
			}
		}
		for _, want := range []string{"v1beta1.wardle.example.com wardle/api True", "v1alpha1.wardle.example.com wardle/api True", "v1.apiregistration.k8s.io Local True"} {
			if !rows[want] {
				t.Errorf("kubectl get apiservices lacks %q:\n%s", want, out)
			}
		}
		// Discovery through the aggregator: aggregated (kubectl's
		// default) and the OpenAPI v3 document kubectl explain reads.
		if out := agg.Kubectl("api-resources", "--api-group=wardle.example.com", "--no-headers"); !strings.Contains(out, "flunders") || !strings.Contains(out, "fischers") {
			t.Errorf("api-resources:\n%s", out)
		}
		if out := agg.Kubectl("explain", "flunders.spec.flunderReference"); !strings.Contains(out, "A name of another flunder") {
			t.Errorf("explain:\n%s", out)
		}
	})

	t.Run("CRUD", func(t *testing.T) {
		agg.KubectlStdin(fmt.Sprintf(aggFlunder, "crud", "a"), "create", "-n", "default", "-f", "-")
		agg.Kubectl("patch", "flunder", "crud", "--type=merge", "-p", `{"spec":{"flunderReference":"b"}}`)
		agg.KubectlStdin(fmt.Sprintf(aggFlunder, "crud", "c"), "apply", "-f", "-")
		if out := agg.Kubectl("get", "flunder", "crud", "-o", "jsonpath={.spec.flunderReference}"); out != "c" {
			t.Errorf("through the aggregator: %q", out)
		}
		// It is wardle's object: wardle serves it directly too.
		if out := backend.Kubectl("get", "flunder", "crud", "-o", "jsonpath={.spec.flunderReference}"); out != "c" {
			t.Errorf("from wardle itself: %q", out)
		}
		if out := agg.Kubectl("get", "flunders.v1alpha1.wardle.example.com", "crud", "-o", "jsonpath={.spec.reference}"); out != "c" {
			t.Errorf("v1alpha1 through the aggregator: %q", out)
		}
		agg.Kubectl("delete", "flunder", "crud")
		if errOut := agg.KubectlFail("get", "flunder", "crud"); !strings.Contains(errOut, `flunders.wardle.example.com "crud" not found`) {
			t.Errorf("after delete: %s", errOut)
		}
	})

	t.Run("watch", func(t *testing.T) {
		watch := watchFlunders(t, agg.Kubeconfig(), agg.DataDir, "watched")
		// Changes made on wardle directly reach the watch through the aggregator.
		backend.KubectlStdin(fmt.Sprintf(aggFlunder, "w1", "a"), "create", "-n", "watched", "-f", "-")
		agg.Kubectl("patch", "flunder", "w1", "-n", "watched", "--type=merge", "-p", `{"spec":{"flunderReference":"b"}}`)
		agg.Kubectl("delete", "flunder", "w1", "-n", "watched")
		watch.expect("ADDED w1 a", "MODIFIED w1 b", "DELETED w1 b")
	})

	t.Run("chunk-size", func(t *testing.T) {
		for i := range 5 {
			agg.KubectlStdin(fmt.Sprintf(aggFlunder, fmt.Sprintf("chunk-%d", i), "x"), "create", "-n", "chunks", "-f", "-")
		}
		out, errOut, err := agg.kubectlRaw(context.Background(), "get", "flunders", "-n", "chunks", "--chunk-size=2", "-o", "name", "-v=6")
		if err != nil {
			t.Fatalf("chunked get: %v\n%s", err, errOut)
		}
		for i := range 5 {
			if !strings.Contains(out, fmt.Sprintf("flunder.wardle.example.com/chunk-%d\n", i)) {
				t.Errorf("chunked get lacks chunk-%d:\n%s", i, out)
			}
		}
		if n := strings.Count(errOut, "limit=2"); n != 3 {
			t.Errorf("want 3 requests with limit=2, saw %d:\n%s", n, errOut)
		}
		if n := strings.Count(errOut, "continue="); n != 2 {
			t.Errorf("want 2 requests with a continue token, saw %d", n)
		}
	})

	t.Run("wardle sees the real user", func(t *testing.T) {
		// alice may edit in the aggregator (its RBAC decides first);
		// wardle has no binding for her: it asks the aggregator
		// (--authorization-kubeconfig), which says yes.
		agg.Kubectl("create", "rolebinding", "alice-edits", "-n", "team", "--clusterrole=edit", "--user=alice")
		alice := agg.tokenUser("alice", "alice-token-0123456789")
		if _, errOut, ok := alice.Kubectl("create", "-n", "team", "-f", writeTemp(t, fmt.Sprintf(aggFlunder, "by-alice", "a"))); !ok {
			t.Fatalf("alice creates a flunder through the aggregator: %s", errOut)
		}
		if out, errOut, ok := alice.Kubectl("get", "flunders", "-n", "team", "-o", "name"); !ok || strings.TrimSpace(out) != "flunder.wardle.example.com/by-alice" {
			t.Fatalf("alice lists flunders: %q %s", out, errOut)
		}
		var sawCreate, sawList bool
		for _, ev := range a.auditEvents(t) {
			if ev.Stage != "ResponseComplete" || !strings.HasPrefix(ev.RequestURI, "/apis/wardle.example.com/v1beta1/namespaces/team/flunders") {
				continue
			}
			if ev.User.Username != "alice" || strings.Join(ev.User.Groups, ",") != "devs,system:authenticated" {
				t.Errorf("wardle saw %s %s as %s %v", ev.Verb, ev.RequestURI, ev.User.Username, ev.User.Groups)
			}
			sawCreate = sawCreate || ev.Verb == "create" && ev.ResponseStatus.Code == 201
			sawList = sawList || ev.Verb == "list" && ev.ResponseStatus.Code == 200
		}
		if !sawCreate || !sawList {
			t.Errorf("wardle's audit log lacks alice's create (%v) or list (%v)", sawCreate, sawList)
		}
		// bob has no binding: the aggregator refuses, wardle never hears of it.
		bob := agg.tokenUser("bob", "bob-token-0123456789")
		if _, errOut, ok := bob.Kubectl("get", "flunders", "-n", "team"); ok || !strings.Contains(errOut, `User "bob" cannot list resource "flunders"`) {
			t.Errorf("bob: %s", errOut)
		}
		for _, ev := range a.auditEvents(t) {
			if ev.User.Username == "bob" {
				t.Errorf("a request of bob reached wardle: %s %s", ev.Verb, ev.RequestURI)
			}
		}
	})

	t.Run("forged front-proxy headers", func(t *testing.T) {
		forged := map[string]string{"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
		// Straight to wardle without the front-proxy certificate: anonymous, refused.
		code, body := rawRequest(t, backend, "GET", "/apis/wardle.example.com/v1beta1/namespaces/team/flunders", "", forged)
		if code != http.StatusUnauthorized {
			t.Errorf("forged headers without credentials: %d %s", code, body)
		}
		// The refusal is audited, by nobody: not as the user the headers
		// name. (The event is written once the response is out: wait.)
		var refusal *auditEvent
		for deadline := time.Now().Add(5 * time.Second); refusal == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			for _, ev := range a.auditEvents(t) {
				if ev.RequestURI == "/apis/wardle.example.com/v1beta1/namespaces/team/flunders" && ev.ResponseStatus.Code == http.StatusUnauthorized {
					refusal = &ev
				}
			}
		}
		switch {
		case refusal == nil:
			t.Error("wardle's audit log lacks the request it refused with 401")
		case refusal.Stage != "ResponseStarted" || refusal.User.Username != "":
			t.Errorf("the refused request is audited as %+v", *refusal)
		}
		// With bob's token, straight to wardle: bob, whatever the headers say.
		forged["Authorization"] = "Bearer bob-token-0123456789"
		code, body = rawRequest(t, backend, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, forged)
		if code != http.StatusCreated || !strings.Contains(body, `"username":"bob"`) || strings.Contains(body, "system:masters") {
			t.Errorf("forged headers with bob's token at wardle: %d %s", code, body)
		}
		// Through the aggregator, as bob: refused there (bob is not admin).
		code, body = rawRequest(t, agg, "GET", "/apis/wardle.example.com/v1beta1/namespaces/team/flunders", "", forged)
		if code != http.StatusForbidden || !strings.Contains(body, `User \"bob\" cannot list`) {
			t.Errorf("forged headers through the aggregator: %d %s", code, body)
		}
	})

	t.Run("wardle stops, then comes back", func(t *testing.T) {
		backend.Signal(syscall.SIGTERM)
		stopped := time.Now()
		if err, ok := backend.Wait(30 * time.Second); !ok {
			t.Fatal("wardle did not stop")
		} else if err != nil {
			t.Logf("wardle exited: %v", err)
		}
		took := waitUntil(t, 10*time.Second, "v1beta1.wardle.example.com unavailable", func() bool {
			return a.available("v1beta1.wardle.example.com") == "False FailedDiscoveryCheck"
		})
		t.Logf("unavailable %v after wardle stopped (%v after it was told to)", took, time.Since(stopped))
		begin := time.Now()
		code, body := rawRequest(t, agg, "GET", "/apis/wardle.example.com/v1beta1/namespaces/team/flunders", "",
			map[string]string{"Authorization": "Bearer alice-token-0123456789"})
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `"reason":"ServiceUnavailable"`) {
			t.Errorf("while wardle is down: %d %s", code, body)
		}
		if d := time.Since(begin); d > time.Second {
			t.Errorf("the 503 took %v", d)
		}
		if errOut := agg.KubectlFail("get", "flunders", "-n", "team"); !strings.Contains(errOut, "ServiceUnavailable") && !strings.Contains(errOut, "the server is currently unable to handle the request") {
			t.Errorf("kubectl while wardle is down: %s", errOut)
		}

		backend.Start()
		took = waitUntil(t, 15*time.Second, "v1beta1.wardle.example.com available again", func() bool {
			return a.available("v1beta1.wardle.example.com") == "True Passed"
		})
		t.Logf("available again %v after wardle was ready", took)
		if out := agg.Kubectl("get", "flunders", "-n", "team", "-o", "name"); strings.TrimSpace(out) != "flunder.wardle.example.com/by-alice" {
			t.Errorf("after the restart: %q", out)
		}
	})
}

// rawRequest sends a request to w with the headers given, and no client
// certificate, trusting w's CA.
func rawRequest(t *testing.T, w *Wardle, method, path, body string, headers map[string]string) (int, string) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(w.DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	req, err := http.NewRequest(method, "https://127.0.0.1:"+strconv.Itoa(w.Port)+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// writeTemp writes content to a temporary file and returns its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "object.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
