package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// tokenUser writes a kubeconfig that authenticates with a bearer token
// only (no client certificate), trusting w's CA.
func (w *Wardle) tokenUser(name, token string) *User {
	w.t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(w.DataDir, "pki", "ca.crt"))
	if err != nil {
		w.t.Fatal(err)
	}
	path := filepath.Join(w.t.TempDir(), name+".kubeconfig")
	kc := certs.Kubeconfig{Server: fmt.Sprintf("https://127.0.0.1:%d", w.Port), CAPEM: caPEM, Token: token, Name: name}
	if err := kc.WriteFile(path); err != nil {
		w.t.Fatal(err)
	}
	return &User{w: w, Name: name, Kubeconfig: path}
}

// mintToken runs `wardle token` against w's data directory.
func (w *Wardle) mintToken(args ...string) string {
	w.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "wardle"), append([]string{"token", "--data-dir", w.DataDir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("wardle token %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// whoami parses `kubectl auth whoami` into attribute -> value.
func whoami(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || strings.Join(strings.Fields(lines[0]), " ") != "ATTRIBUTE VALUE" {
		t.Fatalf("kubectl auth whoami printed:\n%s", out)
	}
	attrs := map[string]string{}
	for _, l := range lines[1:] {
		// The value starts at the VALUE column.
		col := strings.Index(lines[0], "VALUE")
		if len(l) < col {
			t.Fatalf("line %q", l)
		}
		attrs[strings.TrimSpace(l[:col])] = strings.TrimSpace(l[col:])
	}
	return attrs
}

func expectWhoami(t *testing.T, out string, want map[string]string) {
	t.Helper()
	got := whoami(t, out)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("whoami %s = %q, want %q\n%s", k, got[k], v, out)
		}
	}
}

// TestAuthentication drives wardle's authenticators with kubectl: a client
// certificate, a static token (and its revocation), a token minted by
// `wardle token` (surviving a restart), impersonation with --as and
// --as-group (allowed and refused by RBAC), TokenReview, and the audit log
// that records it all without a credential in it.
func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte("alice-static-secret-0123456789,alice,u-alice,\"dev,qa\"\neve-static-secret-0123456789,eve,u-eve\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.log")
	w := StartWardle(t, "--token-auth-file="+tokenFile, "--audit-log-path="+auditLog)
	// Members of dev may read flunders.
	w.Kubectl("create", "clusterrole", "flunder-reader", "--verb=get,list", "--resource=flunders")
	w.Kubectl("create", "clusterrolebinding", "dev-flunders", "--clusterrole=flunder-reader", "--group=dev")
	w.KubectlStdin(fmt.Sprintf(flunderYAML, "f1", "x"), "create", "-f", "-")

	t.Run("client certificate", func(t *testing.T) {
		out := w.Kubectl("auth", "whoami")
		if want := "ATTRIBUTE   VALUE\nUsername    admin\nGroups      [system:masters system:authenticated]\n"; out != want {
			t.Errorf("kubectl auth whoami:\n%s\nwant:\n%s", out, want)
		}
		bob := w.NewUser("bob", "dev")
		out, errOut, ok := bob.Kubectl("auth", "whoami")
		if !ok {
			t.Fatal(errOut)
		}
		expectWhoami(t, out, map[string]string{"Username": "bob", "Groups": "[dev system:authenticated]"})
		if _, errOut, ok := bob.Kubectl("get", "flunders"); !ok {
			t.Errorf("bob, in dev, cannot list flunders: %s", errOut)
		}
	})

	alice := w.tokenUser("alice", "alice-static-secret-0123456789")
	t.Run("static token", func(t *testing.T) {
		out, errOut, ok := alice.Kubectl("auth", "whoami")
		if !ok {
			t.Fatal(errOut)
		}
		if want := "ATTRIBUTE   VALUE\nUsername    alice\nUID         u-alice\nGroups      [dev qa system:authenticated]\n"; out != want {
			t.Errorf("kubectl auth whoami:\n%s\nwant:\n%s", out, want)
		}
		if out, errOut, ok := alice.Kubectl("get", "flunders", "-o", "name"); !ok || strings.TrimSpace(out) != "flunder.wardle.example.com/f1" {
			t.Errorf("alice lists flunders: %s %s", out, errOut)
		}
		eve := w.tokenUser("eve", "eve-static-secret-0123456789")
		if _, errOut, ok := eve.Kubectl("get", "flunders"); ok || !strings.Contains(errOut, `User "eve" cannot list resource "flunders"`) {
			t.Errorf("eve, in no group, lists flunders: %s", errOut)
		}
		bad := w.tokenUser("mallory", "not-a-token-0123456789")
		if _, errOut, ok := bad.Kubectl("get", "flunders"); ok || !strings.Contains(errOut, "error: You must be logged in to the server") {
			t.Errorf("an unknown token: %s", errOut)
		}
	})

	minted := w.mintToken("--user", "carol", "--group", "dev", "--uid", "u-carol", "--ttl", "1h")
	carol := w.tokenUser("carol", minted)
	t.Run("minted token", func(t *testing.T) {
		out, errOut, ok := carol.Kubectl("auth", "whoami")
		if !ok {
			t.Fatal(errOut)
		}
		attrs := whoami(t, out)
		if attrs["Username"] != "carol" || attrs["UID"] != "u-carol" || attrs["Groups"] != "[dev system:authenticated]" ||
			!strings.HasPrefix(attrs["Extra: authentication.kubernetes.io/credential-id"], "[JTI=") {
			t.Errorf("kubectl auth whoami:\n%s", out)
		}
		if _, errOut, ok := carol.Kubectl("get", "flunders"); !ok {
			t.Errorf("carol, in dev, cannot list flunders: %s", errOut)
		}
		ops := w.tokenUser("dan", w.mintToken("--user", "dan", "--group", "ops"))
		if _, errOut, ok := ops.Kubectl("get", "flunders"); ok || !strings.Contains(errOut, `User "dan" cannot list resource "flunders"`) {
			t.Errorf("dan, in ops, lists flunders: %s", errOut)
		}
		short := w.tokenUser("brief", w.mintToken("--user", "brief", "--ttl", "1s"))
		time.Sleep(2 * time.Second)
		// Expired, but within the one-minute clock skew kube-apiserver
		// allows too: still valid. The expiry check itself is unit-tested.
		if _, _, ok := short.Kubectl("auth", "whoami"); !ok {
			t.Error("a token within the clock skew was refused")
		}
	})

	t.Run("impersonation", func(t *testing.T) {
		out := w.Kubectl("auth", "whoami", "--as", "alice", "--as-group", "dev", "--as-group", "qa")
		if want := "ATTRIBUTE   VALUE\nUsername    alice\nGroups      [dev qa system:authenticated]\n"; out != want {
			t.Errorf("kubectl auth whoami --as alice --as-group dev --as-group qa:\n%s\nwant:\n%s", out, want)
		}
		out = w.Kubectl("auth", "whoami", "--as", "system:serviceaccount:default:robot")
		expectWhoami(t, out, map[string]string{"Username": "system:serviceaccount:default:robot",
			"Groups": "[system:serviceaccounts system:serviceaccounts:default system:authenticated]"})
		// The impersonated user's rights, not the admin's.
		if errOut := w.KubectlFail("get", "flunders", "--as", "frank"); !strings.Contains(errOut, `User "frank" cannot list resource "flunders"`) {
			t.Errorf("admin as frank: %s", errOut)
		}
		if out := w.Kubectl("get", "flunders", "--as", "frank", "--as-group", "dev", "-o", "name"); strings.TrimSpace(out) != "flunder.wardle.example.com/f1" {
			t.Errorf("admin as frank in dev: %s", out)
		}
		// alice may not impersonate, until RBAC says she may impersonate bob.
		if _, errOut, ok := alice.Kubectl("get", "flunders", "--as", "bob"); ok ||
			!strings.Contains(errOut, `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`) {
			t.Errorf("alice as bob: %s", errOut)
		}
		w.Kubectl("create", "clusterrole", "impersonate-bob", "--verb=impersonate", "--resource=users", "--resource-name=bob")
		w.Kubectl("create", "clusterrolebinding", "alice-as-bob", "--clusterrole=impersonate-bob", "--user=alice")
		waitUntil(t, 5*time.Second, "alice may impersonate bob", func() bool {
			_, _, ok := alice.Kubectl("auth", "whoami", "--as", "bob")
			return ok
		})
		out, _, _ = alice.Kubectl("auth", "whoami", "--as", "bob")
		expectWhoami(t, out, map[string]string{"Username": "bob", "Groups": "[system:authenticated]"})
		if _, errOut, ok := alice.Kubectl("get", "flunders", "--as", "bob", "--as-group", "system:masters"); ok ||
			!strings.Contains(errOut, `groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups"`) {
			t.Errorf("alice as bob in system:masters: %s", errOut)
		}
	})

	t.Run("TokenReview", func(t *testing.T) {
		review := func(token string) string {
			return w.KubectlStdin(fmt.Sprintf("apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: %q\n", token),
				// --validate=false: kubectl validates kinds without PATCH
				// against /openapi/v2 in protobuf, which apikit does not serve.
				"create", "--validate=false", "-f", "-", "-o", "jsonpath={.status.authenticated} {.status.user.username} {.status.user.groups} {.spec.token}")
		}
		if got := review(minted); got != "true carol [\"dev\",\"system:authenticated\"] " {
			t.Errorf("review of carol's token: %q", got)
		}
		if got := review("alice-static-secret-0123456789"); got != "true alice [\"dev\",\"qa\",\"system:authenticated\"] " {
			t.Errorf("review of alice's token: %q", got)
		}
		if got := review("nobody-knows-this"); got != "   " {
			t.Errorf("review of an unknown token: %q", got)
		}
	})

	t.Run("revoking a static token by removing its line", func(t *testing.T) {
		if err := os.WriteFile(tokenFile, []byte("eve-static-secret-0123456789,eve,u-eve\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// The file is looked at every second; successes are cached for 10s.
		took := waitUntil(t, 20*time.Second, "alice's token is refused", func() bool {
			_, errOut, ok := alice.Kubectl("auth", "whoami")
			return !ok && strings.Contains(errOut, "error: You must be logged in to the server (Unauthorized)")
		})
		t.Logf("alice's token was refused %v after its line was removed", took.Round(time.Second))
	})

	t.Run("the minted token survives a restart", func(t *testing.T) {
		w.Stop()
		w.Start()
		out, errOut, ok := carol.Kubectl("auth", "whoami")
		if !ok {
			t.Fatalf("after a restart: %s", errOut)
		}
		expectWhoami(t, out, map[string]string{"Username": "carol"})
	})

	t.Run("audit log", func(t *testing.T) {
		data, err := os.ReadFile(auditLog)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"alice-static-secret", "eve-static-secret", minted, "not-a-token"} {
			if strings.Contains(string(data), secret) {
				t.Errorf("the audit log holds a credential (%.20s...)", secret)
			}
		}
		type user struct {
			Username string   `json:"username"`
			Groups   []string `json:"groups"`
		}
		var sawImpersonation, sawCarol, sawForbidden bool
		// Each audited request is logged when received and when complete,
		// under one audit ID, as kube-apiserver does without omitStages.
		stages := map[string][]string{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev struct {
				Kind, APIVersion, Level, Stage, Verb, AuditID string
				User                                          user
				ImpersonatedUser                              *user
				ObjectRef                                     *struct{ Resource, APIGroup string }
				ResponseStatus                                *struct{ Code int }
				SourceIPs                                     []string
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("line %s: %v", sc.Bytes(), err)
			}
			if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.Level != "Metadata" || ev.AuditID == "" || len(ev.SourceIPs) == 0 {
				t.Fatalf("event %s", sc.Bytes())
			}
			if (ev.Stage == "RequestReceived") != (ev.ResponseStatus == nil) {
				t.Errorf("a response status at stage %s: %s", ev.Stage, sc.Bytes())
				continue
			}
			stages[ev.AuditID] = append(stages[ev.AuditID], ev.Stage)
			if ev.ResponseStatus == nil {
				continue
			}
			if ev.User.Username == "admin" && ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == "frank" &&
				ev.ObjectRef != nil && ev.ObjectRef.Resource == "flunders" && ev.Verb == "list" {
				sawImpersonation = true
			}
			if ev.User.Username == "carol" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "selfsubjectreviews" && ev.ResponseStatus.Code == 201 {
				sawCarol = true
			}
			if ev.User.Username == "alice" && ev.ImpersonatedUser == nil && ev.ResponseStatus.Code == 403 {
				sawForbidden = true
			}
		}
		received := 0
		for id, st := range stages {
			if st[0] == "RequestReceived" {
				received++
				// A request still in flight has only RequestReceived.
				if last := st[len(st)-1]; len(st) > 1 && last != "ResponseComplete" && last != "ResponseStarted" {
					t.Errorf("audit ID %s: stages %v", id, st)
				}
			}
		}
		if received == 0 || received < len(stages)/2 {
			t.Errorf("%d of %d audited requests have a RequestReceived event", received, len(stages))
		}
		if !sawImpersonation || !sawCarol || !sawForbidden {
			t.Errorf("audit log lacks admin as frank (%v), carol's whoami (%v), alice's refused impersonation (%v)", sawImpersonation, sawCarol, sawForbidden)
		}
	})
}

// TestDelegatedAuthentication puts wardle behind another: the front
// server's static tokens reach it through the TokenReview webhook, and a
// front proxy's certificate lets it name users in X-Remote-* headers,
// which nobody else may.
func TestDelegatedAuthentication(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte("parent-token-0123456789,grace,u-grace,devs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parent := StartWardle(t, "--token-auth-file="+tokenFile)

	// The child asks the parent about tokens as the parent's admin (a
	// binding to system:auth-delegator would do in a real cluster).
	pki := filepath.Join(parent.DataDir, "pki")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(pki, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	webhookConfig := filepath.Join(dir, "webhook.kubeconfig")
	if err := (certs.Kubeconfig{Server: fmt.Sprintf("https://127.0.0.1:%d/apis/authentication.k8s.io/v1/tokenreviews", parent.Port),
		CAPEM: read("ca.crt"), Client: certs.Pair{CertPEM: read("admin.crt"), KeyPEM: read("admin.key")}}).WriteFile(webhookConfig); err != nil {
		t.Fatal(err)
	}
	proxyCA, err := certs.NewCA("front-proxy-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	proxyCAFile := filepath.Join(dir, "front-proxy-ca.crt")
	if err := os.WriteFile(proxyCAFile, proxyCA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	child := StartWardle(t, "--authentication-token-webhook-config-file="+webhookConfig,
		"--requestheader-client-ca-file="+proxyCAFile, "--requestheader-allowed-names=front-proxy-client")

	t.Run("a token of the parent", func(t *testing.T) {
		grace := child.tokenUser("grace", "parent-token-0123456789")
		out, errOut, ok := grace.Kubectl("auth", "whoami")
		if !ok {
			t.Fatal(errOut)
		}
		if want := "ATTRIBUTE   VALUE\nUsername    grace\nUID         u-grace\nGroups      [devs system:authenticated]\n"; out != want {
			t.Errorf("kubectl auth whoami through the webhook:\n%s\nwant:\n%s", out, want)
		}
		if _, errOut, ok := child.tokenUser("x", "unknown-to-both-0123").Kubectl("auth", "whoami"); ok || !strings.Contains(errOut, "You must be logged in to the server (Unauthorized)") {
			t.Errorf("an unknown token: %s", errOut)
		}
	})

	t.Run("front proxy", func(t *testing.T) {
		caPEM, err := os.ReadFile(filepath.Join(child.DataDir, "pki", "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		whoamiAs := func(client certs.Pair, headers map[string]string) (int, string) {
			t.Helper()
			cert, err := client.TLSCertificate()
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}}}
			req, _ := http.NewRequest("POST", fmt.Sprintf("https://127.0.0.1:%d/apis/authentication.k8s.io/v1/selfsubjectreviews", child.Port),
				strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var ssr struct {
				Status struct {
					UserInfo struct {
						Username string
						Groups   []string
					} `json:"userInfo"`
				}
			}
			json.Unmarshal(body, &ssr)
			return resp.StatusCode, ssr.Status.UserInfo.Username + " " + strings.Join(ssr.Status.UserInfo.Groups, ",")
		}
		proxy, err := proxyCA.IssueClient("front-proxy-client", nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		spoof := map[string]string{"X-Remote-User": "heidi", "X-Remote-Group": "system:masters"}
		if code, who := whoamiAs(proxy, spoof); code != 201 || who != "heidi system:masters,system:authenticated" {
			t.Errorf("through the front proxy: %d %q", code, who)
		}
		// A client certificate of the server's own CA may not name users.
		childCA, err := certs.ParseCA(mustReadFile(t, filepath.Join(child.DataDir, "pki", "ca.crt")), mustReadFile(t, filepath.Join(child.DataDir, "pki", "ca.key")))
		if err != nil {
			t.Fatal(err)
		}
		ivan, err := childCA.IssueClient("ivan", nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if code, who := whoamiAs(ivan, spoof); code != 201 || who != "ivan system:authenticated" {
			t.Errorf("spoofed headers with a user's certificate: %d %q", code, who)
		}
		// Nor may a certificate of the proxy's CA with another name.
		other, err := proxyCA.IssueClient("not-the-proxy", nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := whoamiAs(other, spoof); code != 401 {
			t.Errorf("a proxy CA certificate with a name not allowed: %d", code)
		}
	})
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
