//go:build kubeapiserver

// This file is not part of the default run: it builds kube-apiserver
// v1.37.2 (tools/kube-apiserver; about 20 minutes cold on 2 cores, cached
// afterwards) and etcd, and registers wardle with the real aggregator.
// Run it with
//
//	cd e2e && go test -tags kubeapiserver -run TestKubeAPIServer -v -timeout 60m .
//
// $APIKIT_KUBE_APISERVER names a prebuilt kube-apiserver instead;
// $APIKIT_ETCD_BINARY a prebuilt etcd. Everything listens on and dials
// 127.0.0.1 only.

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/internal/testlog"
)

// kubeAPIServerEnv names a prebuilt kube-apiserver binary.
const kubeAPIServerEnv = "APIKIT_KUBE_APISERVER"

// kubeAPIServerBinary builds tools/kube-apiserver once per go.mod, go.sum
// and Go version, into the user's cache directory.
func kubeAPIServerBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(kubeAPIServerEnv); bin != "" {
		return bin
	}
	tools, err := filepath.Abs(filepath.Join("..", "tools", "kube-apiserver"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(tools, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	h.Write([]byte(runtime.Version() + runtime.GOOS + runtime.GOARCH))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "apikit", "kube-apiserver", "v1.37.2-"+hex.EncodeToString(h.Sum(nil))[:12])
	bin := filepath.Join(dir, "kube-apiserver")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("building kube-apiserver v1.37.2 into %s (about 20 minutes cold on 2 cores)", dir)
	started := time.Now()
	tmp := bin + ".tmp" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("nice", "-n", "19", "go", "build", "-o", tmp, "k8s.io/kubernetes/cmd/kube-apiserver")
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("building kube-apiserver: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built kube-apiserver in %v", time.Since(started).Round(time.Second))
	return bin
}

// kubeAPIServer is a kube-apiserver process on loopback, with a client CA
// (admin and users), a front-proxy CA and its proxy client certificate.
type kubeAPIServer struct {
	t          *testing.T
	dir        string
	port       int
	clientCA   *certs.CA
	kubeconfig string // admin (system:masters)
	cmd        *exec.Cmd
	out        *testlog.Buffer
}

func writePEM(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startKubeAPIServer starts kube-apiserver with --enable-aggregator-routing
// as routing says.
func startKubeAPIServer(t *testing.T, routing bool) *kubeAPIServer {
	t.Helper()
	bin := kubeAPIServerBinary(t)
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	k := &kubeAPIServer{t: t, dir: dir, port: freePort(t), out: &testlog.Buffer{}}
	must := func(ca *certs.CA, err error) *certs.CA {
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	servingCA := must(certs.NewCA("kube-ca", time.Hour))
	k.clientCA = must(certs.NewCA("kube-client-ca", time.Hour))
	proxyCA := must(certs.NewCA("front-proxy-ca", time.Hour))
	serving, err := servingCA.IssueServing([]string{"127.0.0.1", "localhost", "kubernetes.default.svc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := proxyCA.IssueClient("front-proxy-client", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(saKey)
	pub, _ := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	p := func(name string) string { return filepath.Join(dir, name) }
	writePEM(t, p("ca.crt"), servingCA.CertPEM)
	writePEM(t, p("serving.crt"), serving.CertPEM)
	writePEM(t, p("serving.key"), serving.KeyPEM)
	writePEM(t, p("client-ca.crt"), k.clientCA.CertPEM)
	writePEM(t, p("front-proxy-ca.crt"), proxyCA.CertPEM)
	writePEM(t, p("front-proxy-client.crt"), proxy.CertPEM)
	writePEM(t, p("front-proxy-client.key"), proxy.KeyPEM)
	writePEM(t, p("sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	writePEM(t, p("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	k.kubeconfig = k.userKubeconfig("admin", "system:masters")

	k.cmd = exec.Command(bin,
		"--etcd-servers="+strings.Join(etcd, ","),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(k.port),
		"--endpoint-reconciler-type=none", "--service-cluster-ip-range=10.0.0.0/24",
		"--tls-cert-file="+p("serving.crt"), "--tls-private-key-file="+p("serving.key"),
		"--client-ca-file="+p("client-ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+p("sa.pub"), "--service-account-signing-key-file="+p("sa.key"),
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file="+p("front-proxy-ca.crt"), "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p("front-proxy-client.crt"), "--proxy-client-key-file="+p("front-proxy-client.key"),
		// With routing the aggregator dials the endpoints of a Service
		// (an FQDN EndpointSlice of 127.0.0.1); without, the name of an
		// ExternalName Service (localhost). Never a cluster IP.
		"--enable-aggregator-routing="+strconv.FormatBool(routing),
		"--profiling=false", "--cert-dir="+p("kube-certs"),
	)
	k.cmd.Stdout, k.cmd.Stderr = k.out, k.out
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := k.cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = k.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, _, err := k.kubectl("get", "--raw", "/readyz")
		if err == nil && strings.TrimSpace(out) == "ok" {
			break
		}
		select {
		case <-exited:
			t.Fatalf("kube-apiserver exited:\n%s", tail(k.out.String(), 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 3m:\n%s", tail(k.out.String(), 40))
		}
		time.Sleep(500 * time.Millisecond)
	}
	return k
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// userKubeconfig writes a kubeconfig of a client certificate of the
// client CA.
func (k *kubeAPIServer) userKubeconfig(user string, groups ...string) string {
	k.t.Helper()
	pair, err := k.clientCA.IssueClient(user, groups, time.Hour)
	if err != nil {
		k.t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(k.dir, "ca.crt"))
	if err != nil {
		k.t.Fatal(err)
	}
	path := filepath.Join(k.dir, user+".kubeconfig")
	if err := (certs.Kubeconfig{Server: "https://127.0.0.1:" + strconv.Itoa(k.port), CAPEM: caPEM, Client: pair, Name: user}).WriteFile(path); err != nil {
		k.t.Fatal(err)
	}
	return path
}

func (k *kubeAPIServer) kubectlAs(kubeconfig, stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+filepath.Join(k.dir, "home-"+filepath.Base(kubeconfig)))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func (k *kubeAPIServer) kubectl(args ...string) (string, string, error) {
	return k.kubectlAs(k.kubeconfig, "", args...)
}

// must runs kubectl as admin (with stdin when given) and fails t on error.
func (k *kubeAPIServer) must(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := k.kubectlAs(k.kubeconfig, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// TestKubeAPIServer registers wardle with a real kube-apiserver, as
// examples/wardle/deploy does in a cluster: wardle is delegated
// (--authentication-kubeconfig, --authorization-kubeconfig as a user bound
// to system:auth-delegator and extension-apiserver-authentication-reader)
// and reads the front proxy's trust from the ConfigMap kube-apiserver
// writes. kube-apiserver routes to endpoints (--enable-aggregator-routing)
// and reaches wardle through a headless Service, wardle/wardle (whose name
// wardle's certificate gets from --tls-san), with an FQDN EndpointSlice of
// 127.0.0.1: nothing leaves loopback.
func TestKubeAPIServer(t *testing.T) {
	k := startKubeAPIServer(t, true)

	// The delegate's user and its two bindings.
	delegate := k.userKubeconfig("wardle-delegate")
	k.must(t, "", "create", "clusterrolebinding", "wardle:system:auth-delegator", "--clusterrole=system:auth-delegator", "--user=wardle-delegate")
	k.must(t, "", "create", "rolebinding", "wardle-auth-reader", "-n", "kube-system", "--role=extension-apiserver-authentication-reader", "--user=wardle-delegate")

	auditLog := filepath.Join(t.TempDir(), "audit.log")
	backend := StartWardle(t, "--authentication-kubeconfig="+delegate, "--authorization-kubeconfig="+delegate,
		"--tls-san=wardle.wardle.svc", "--audit-log-path="+auditLog)
	if !strings.Contains(backend.Output(), "delegated authentication: read kube-system/extension-apiserver-authentication") {
		t.Fatalf("wardle did not read kube-apiserver's ConfigMap:\n%s", backend.Output())
	}
	caBundle := base64.StdEncoding.EncodeToString(mustReadFile(t, filepath.Join(backend.DataDir, "pki", "ca.crt")))
	port := backend.Port
	k.must(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: wardle}
---
apiVersion: v1
kind: Service
metadata: {name: wardle, namespace: wardle}
spec:
  clusterIP: None
  ports: [{name: https, port: 443, targetPort: %[1]d}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: wardle-loopback
  namespace: wardle
  labels: {kubernetes.io/service-name: wardle}
addressType: FQDN
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]
ports: [{name: https, port: %[1]d, protocol: TCP}]
`, port), "apply", "-f", "-")
	k.must(t, apiServices("wardle", 443, caBundle), "apply", "-f", "-")

	available := func(name string) string {
		out, _, _ := k.kubectl("get", "apiservice", name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}`)
		return strings.TrimSpace(out)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if available("v1beta1.wardle.example.com") == "True Passed" && available("v1alpha1.wardle.example.com") == "True Passed" {
			break
		}
		if time.Now().After(deadline) {
			out, _, _ := k.kubectl("get", "apiservices", "v1beta1.wardle.example.com", "v1alpha1.wardle.example.com", "-o", "yaml")
			t.Fatalf("wardle's APIServices not available after 60s:\n%s\nkube-apiserver:\n%s", out, tail(k.out.String(), 30))
		}
	}

	t.Run("CRUD", func(t *testing.T) {
		k.must(t, fmt.Sprintf(aggFlunder, "crud", "a"), "create", "-n", "default", "-f", "-")
		k.must(t, "", "patch", "flunder", "crud", "--type=merge", "-p", `{"spec":{"flunderReference":"b"}}`)
		k.must(t, fmt.Sprintf(aggFlunder, "crud", "c"), "apply", "-f", "-")
		if out := k.must(t, "", "get", "flunders.v1alpha1.wardle.example.com", "crud", "-o", "jsonpath={.spec.reference}"); out != "c" {
			t.Errorf("v1alpha1: %q", out)
		}
		if out := backend.Kubectl("get", "flunder", "crud", "-o", "jsonpath={.spec.flunderReference}"); out != "c" {
			t.Errorf("from wardle itself: %q", out)
		}
		// kube-apiserver fetches wardle's OpenAPI documents on its own
		// schedule (and had a 503 while wardle was unavailable).
		start := time.Now()
		for {
			out, errOut, err := k.kubectl("explain", "flunders.spec.flunderReference")
			if err == nil && strings.Contains(out, "A name of another flunder") {
				t.Logf("kubectl explain works %v after the APIServices were available", time.Since(start).Round(time.Second))
				break
			}
			if time.Since(start) > 3*time.Minute {
				index, _, _ := k.kubectl("get", "--raw", "/openapi/v3")
				t.Errorf("explain through kube-apiserver: %v %s%s\n/openapi/v3: %s", err, out, errOut, index)
				break
			}
			time.Sleep(2 * time.Second)
		}
		k.must(t, "", "delete", "flunder", "crud")
	})

	t.Run("watch", func(t *testing.T) {
		watch := watchFlunders(t, k.kubeconfig, k.dir, "watched")
		k.must(t, fmt.Sprintf(aggFlunder, "w1", "a"), "create", "-n", "watched", "-f", "-")
		k.must(t, "", "patch", "flunder", "w1", "-n", "watched", "--type=merge", "-p", `{"spec":{"flunderReference":"b"}}`)
		k.must(t, "", "delete", "flunder", "w1", "-n", "watched")
		watch.expect("ADDED w1 a", "MODIFIED w1 b", "DELETED w1 b")
	})

	t.Run("chunk-size", func(t *testing.T) {
		for i := range 5 {
			k.must(t, fmt.Sprintf(aggFlunder, fmt.Sprintf("chunk-%d", i), "x"), "create", "-n", "chunks", "-f", "-")
		}
		out, errOut, err := k.kubectl("get", "flunders", "-n", "chunks", "--chunk-size=2", "-o", "name", "-v=6")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		if n := strings.Count(out, "flunder.wardle.example.com/chunk-"); n != 5 {
			t.Errorf("%d flunders:\n%s", n, out)
		}
		if n := strings.Count(errOut, "limit=2"); n != 3 {
			t.Errorf("want 3 requests with limit=2, saw %d:\n%s", n, errOut)
		}
	})

	t.Run("wardle sees the real user", func(t *testing.T) {
		k.must(t, "", "create", "namespace", "team")
		k.must(t, "", "create", "clusterrole", "flunder-editor", "--verb=*", "--resource=flunders.wardle.example.com")
		k.must(t, "", "create", "rolebinding", "alice-edits", "-n", "team", "--clusterrole=flunder-editor", "--user=alice")
		alice := k.userKubeconfig("alice", "devs")
		if _, errOut, err := k.kubectlAs(alice, fmt.Sprintf(aggFlunder, "by-alice", "a"), "create", "-n", "team", "-f", "-"); err != nil {
			t.Fatalf("alice creates: %v %s", err, errOut)
		}
		a := &aggregation{auditLog: auditLog}
		saw := false
		for _, ev := range a.auditEvents(t) {
			if ev.Stage == "ResponseComplete" && ev.Verb == "create" && strings.HasPrefix(ev.RequestURI, "/apis/wardle.example.com/v1beta1/namespaces/team/flunders") {
				saw = true
				if ev.User.Username != "alice" || strings.Join(ev.User.Groups, ",") != "devs,system:authenticated" || ev.ResponseStatus.Code != 201 {
					t.Errorf("wardle saw %s %v (%d)", ev.User.Username, ev.User.Groups, ev.ResponseStatus.Code)
				}
			}
		}
		if !saw {
			t.Error("wardle's audit log lacks alice's create")
		}
		code, body := rawRequest(t, backend, "GET", "/apis/wardle.example.com/v1beta1/namespaces/team/flunders", "",
			map[string]string{"X-Remote-User": "admin", "X-Remote-Group": "system:masters"})
		if code != http.StatusUnauthorized {
			t.Errorf("forged headers straight to wardle: %d %s", code, body)
		}
	})

	t.Run("wardle stops, then comes back", func(t *testing.T) {
		backend.Signal(syscall.SIGTERM)
		if _, ok := backend.Wait(30 * time.Second); !ok {
			t.Fatal("wardle did not stop")
		}
		took := waitUntil(t, 2*time.Minute, "v1beta1.wardle.example.com unavailable", func() bool {
			return strings.HasPrefix(available("v1beta1.wardle.example.com"), "False")
		})
		t.Logf("kube-apiserver marked wardle unavailable %v after it stopped", took)
		if _, errOut, err := k.kubectl("get", "flunders", "-n", "team"); err == nil || !strings.Contains(errOut, "ServiceUnavailable") && !strings.Contains(errOut, "unable to handle the request") {
			t.Errorf("while wardle is down: %v %s", err, errOut)
		}
		backend.Start()
		took = waitUntil(t, 2*time.Minute, "v1beta1.wardle.example.com available again", func() bool {
			return available("v1beta1.wardle.example.com") == "True Passed"
		})
		t.Logf("available again %v after wardle was ready", took)
		if out := k.must(t, "", "get", "flunders", "-n", "team", "-o", "name"); strings.TrimSpace(out) != "flunder.wardle.example.com/by-alice" {
			t.Errorf("after the restart: %q", out)
		}
	})
}

// apiServices are wardle's APIServices for the Service wardle/<service>.
func apiServices(service string, port int, caBundle string) string {
	var b strings.Builder
	for version, priority := range map[string]int{"v1beta1": 15, "v1alpha1": 10} {
		fmt.Fprintf(&b, `---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %[1]s.wardle.example.com}
spec:
  group: wardle.example.com
  version: %[1]s
  service: {namespace: wardle, name: %[2]s, port: %[3]d}
  caBundle: %[4]s
  groupPriorityMinimum: 1000
  versionPriority: %[5]d
`, version, service, port, caBundle, priority)
	}
	return b.String()
}

// TestKubeAPIServerExternalName: without aggregator routing, kube-apiserver
// reaches wardle through a Service of type ExternalName, localhost, at the
// APIService's port.
func TestKubeAPIServerExternalName(t *testing.T) {
	k := startKubeAPIServer(t, false)
	delegate := k.userKubeconfig("wardle-delegate")
	k.must(t, "", "create", "clusterrolebinding", "wardle:system:auth-delegator", "--clusterrole=system:auth-delegator", "--user=wardle-delegate")
	k.must(t, "", "create", "rolebinding", "wardle-auth-reader", "-n", "kube-system", "--role=extension-apiserver-authentication-reader", "--user=wardle-delegate")
	backend := StartWardle(t, "--authentication-kubeconfig="+delegate, "--authorization-kubeconfig="+delegate)
	caBundle := base64.StdEncoding.EncodeToString(mustReadFile(t, filepath.Join(backend.DataDir, "pki", "ca.crt")))
	k.must(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: wardle}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: wardle}
spec:
  type: ExternalName
  externalName: localhost
`), "apply", "-f", "-")
	k.must(t, apiServices("api", backend.Port, caBundle), "apply", "-f", "-")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _, _ := k.kubectl("get", "apiservice", "v1beta1.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		if out == "True" {
			break
		}
		if time.Now().After(deadline) {
			out, _, _ := k.kubectl("get", "apiservices", "v1beta1.wardle.example.com", "-o", "yaml")
			t.Fatalf("not available after 60s:\n%s", out)
		}
	}
	k.must(t, fmt.Sprintf(aggFlunder, "external", "a"), "create", "-n", "default", "-f", "-")
	if out := k.must(t, "", "get", "flunders", "-o", "name"); strings.TrimSpace(out) != "flunder.wardle.example.com/external" {
		t.Errorf("through the ExternalName Service: %q", out)
	}
}
