package e2e

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// e2eWebhooks serves the test's admission webhooks over TLS on
// 127.0.0.1: /deny refuses, /patch adds the label patched=yes (with a
// warning), /slow answers after 5 s.
func e2eWebhooks(t *testing.T) (url string, caBundle []byte) {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review map[string]any
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, _ := review["request"].(map[string]any)
		resp := map[string]any{"uid": req["uid"], "allowed": true}
		switch r.URL.Path {
		case "/deny":
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "message": "flunders with case=deny are not welcome"}
		case "/patch":
			obj, _ := req["object"].(map[string]any)
			md, _ := obj["metadata"].(map[string]any)
			op := `[{"op":"add","path":"/metadata/labels/patched","value":"yes"}]`
			if md["labels"] == nil {
				op = `[{"op":"add","path":"/metadata/labels","value":{"patched":"yes"}}]`
			}
			resp["patchType"] = "JSONPatch"
			resp["patch"] = base64.StdEncoding.EncodeToString([]byte(op))
			resp["warnings"] = []string{"patched by the e2e webhook"}
		case "/slow":
			select {
			case <-time.After(5 * time.Second):
			case <-stop:
			case <-r.Context().Done():
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	srv.StartTLS()
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// webhookYAML is one webhook of a configuration, scoped to flunders
// labelled case=<c>.
func webhookYAML(name, url, caBundle, c, failurePolicy string, timeout int) string {
	return fmt.Sprintf(`- name: %s.e2e.example.com
  clientConfig:
    url: %s
    caBundle: %s
  rules:
  - operations: ["CREATE"]
    apiGroups: ["wardle.example.com"]
    apiVersions: ["v1beta1"]
    resources: ["flunders"]
  objectSelector:
    matchLabels:
      case: %s
  failurePolicy: %s
  timeoutSeconds: %d
  sideEffects: None
  admissionReviewVersions: ["v1"]
`, name, url, caBundle, c, failurePolicy, timeout)
}

const caseFlunderYAML = `apiVersion: wardle.example.com/v1beta1
kind: Flunder
metadata:
  name: %s
  labels:
    case: %s
`

// TestAdmissionWebhooks drives webhooks served by the test over TLS
// through a real wardle with kubectl: a denial, a patch, one down with
// failurePolicy Fail and Ignore, one slower than its timeout.
func TestAdmissionWebhooks(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	url, ca := e2eWebhooks(t)
	caB64 := base64.StdEncoding.EncodeToString(ca)
	// A port nothing listens on: the webhook is down.
	down := httptest.NewUnstartedServer(http.NotFoundHandler())
	down.StartTLS()
	downURL := down.URL
	down.Close()

	validating := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: e2e\nwebhooks:\n" +
		webhookYAML("deny", url+"/deny", caB64, "deny", "Fail", 10) +
		webhookYAML("down-fail", downURL+"/down", caB64, "down-fail", "Fail", 10) +
		webhookYAML("down-ignore", downURL+"/down", caB64, "down-ignore", "Ignore", 10) +
		webhookYAML("slow", url+"/slow", caB64, "slow", "Fail", 1)
	mutating := "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: e2e\nwebhooks:\n" +
		webhookYAML("patch", url+"/patch", caB64, "patch", "Fail", 10)
	w.KubectlStdin(mutating, "apply", "-f", "-")
	w.KubectlStdin(validating, "apply", "-f", "-")
	applied := time.Now()

	create := func(name, c string) (string, string, error) {
		return w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, name, c), "create", "-f", "-")
	}

	t.Run("deny", func(t *testing.T) {
		// The configuration is in effect once the informer has it:
		// retry a write that passes until then.
		want := `admission webhook "deny.e2e.example.com" denied the request: flunders with case=deny are not welcome`
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			_, errOut, err := create(fmt.Sprintf("denied-%d", i), "deny")
			if err != nil && strings.Contains(errOut, want) {
				// The webhook's Status has no reason: kubectl prints none,
				// as with kube-apiserver.
				if !strings.Contains(errOut, "Error from server: error when creating") {
					t.Errorf("stderr %q", errOut)
				}
				t.Logf("the configuration took effect %v after kubectl apply", time.Since(applied).Round(time.Millisecond))
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("create: %v\n%s", err, errOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	t.Run("patch", func(t *testing.T) {
		_, errOut, err := create("patched", "patch")
		if err != nil {
			t.Fatalf("create: %v\n%s", err, errOut)
		}
		if !strings.Contains(errOut, "Warning: patched by the e2e webhook") {
			t.Errorf("kubectl's stderr %q: want the webhook's warning", errOut)
		}
		if got := w.Kubectl("get", "flunder", "patched", "-o", "jsonpath={.metadata.labels.patched}"); got != "yes" {
			t.Errorf("label patched=%q, want yes", got)
		}
	})
	t.Run("down with failurePolicy Fail", func(t *testing.T) {
		_, errOut, err := create("down-fail", "down-fail")
		want := `Internal error occurred: failed calling webhook "down-fail.e2e.example.com": failed to call webhook: Post "` + downURL + `/down?timeout=10s": dial tcp`
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("create: %v\n%s\nwant %q", err, errOut, want)
		}
	})
	t.Run("down with failurePolicy Ignore", func(t *testing.T) {
		if _, errOut, err := create("down-ignore", "down-ignore"); err != nil {
			t.Errorf("create: %v\n%s", err, errOut)
		}
	})
	t.Run("slow: timeoutSeconds honoured", func(t *testing.T) {
		start := time.Now()
		_, errOut, err := create("slow", "slow")
		if err == nil || !strings.Contains(errOut, `failed calling webhook "slow.e2e.example.com"`) || !strings.Contains(errOut, "context deadline exceeded") {
			t.Errorf("create: %v\n%s", err, errOut)
		}
		// 1 s timeout, 5 s webhook: well under the webhook's time even on
		// a loaded machine (kubectl's own start included).
		if d := time.Since(start); d > 4500*time.Millisecond {
			t.Errorf("the write took %v with a 1 s webhook timeout", d)
		}
	})
	t.Run("kubectl get and validation", func(t *testing.T) {
		out := w.Kubectl("get", "validatingwebhookconfigurations")
		if !strings.Contains(out, "WEBHOOKS") || !strings.Contains(out, "e2e    4") {
			t.Errorf("get validatingwebhookconfigurations:\n%s", out)
		}
		bad := strings.Replace(validating, "name: e2e\n", "name: bad\n", 1)
		bad = strings.Replace(bad, url+"/deny", "http://127.0.0.1/deny", 1)
		_, errOut, err := w.kubectlStdinRaw(bad, "create", "-f", "-")
		want := `webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`
		if err == nil || !strings.Contains(errOut, want) || !strings.Contains(errOut, `The ValidatingWebhookConfiguration "bad" is invalid`) {
			t.Errorf("create of an http webhook: %v\n%s", err, errOut)
		}
	})
	t.Run("deleted configuration stops denying", func(t *testing.T) {
		w.Kubectl("delete", "validatingwebhookconfiguration", "e2e")
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			_, errOut, err := create(fmt.Sprintf("allowed-%d", i), "deny")
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still refused: %s", errOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// TestAdmissionFlags: --disable-admission-plugins turns the compiled-in
// BanFlunder off, and --admission-control-config-file's webhook
// kubeconfig gives the server the token it presents to a webhook.
func TestAdmissionFlags(t *testing.T) {
	var tokens sync.Map
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review map[string]any
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, _ := review["request"].(map[string]any)
		tokens.Store(r.Header.Get("Authorization"), true)
		resp := map[string]any{"uid": req["uid"], "allowed": r.Header.Get("Authorization") == "Bearer e2e-token"}
		if resp["allowed"] == false {
			resp["status"] = map[string]any{"message": "no token"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "webhooks.kubeconfig")
	admissionConfig := filepath.Join(dir, "admission.yaml")
	host := strings.TrimPrefix(srv.URL, "https://")
	for path, data := range map[string]string{
		kubeconfig: "apiVersion: v1\nkind: Config\nusers:\n- name: '" + host + "'\n  user:\n    token: e2e-token\n",
		admissionConfig: "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ValidatingAdmissionWebhook\n" +
			"  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: " + kubeconfig + "\n",
	} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := StartWardle(t, "--storage-backend=memory", "--disable-admission-plugins=BanFlunder", "--admission-control-config-file="+admissionConfig)
	w.KubectlStdin("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: token\nwebhooks:\n"+
		webhookYAML("token", srv.URL+"/token", ca, "token", "Fail", 10), "apply", "-f", "-")
	w.KubectlStdin("apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata: {name: strict}\ndisallowedFlunders: [banned]\n", "create", "-f", "-")

	// BanFlunder is off: the name a Fischer bans is taken.
	if _, errOut, err := w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, "banned", "none"), "create", "-f", "-"); err != nil {
		t.Errorf("create of a banned name with BanFlunder disabled: %v\n%s", err, errOut)
	}
	// The webhook is called with the kubeconfig's token once the
	// configuration is in effect.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		_, errOut, err := w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, fmt.Sprintf("t%d", i), "token"), "create", "-f", "-")
		if err != nil {
			t.Fatalf("create: %v\n%s", err, errOut)
		}
		if _, called := tokens.Load("Bearer e2e-token"); called {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook was never called with the token")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, bare := tokens.Load(""); bare {
		t.Error("the webhook was called without the token")
	}

	// Unknown plugin names are refused at start, with kube's words.
	out, err := exec.Command(filepath.Join(binDir, "wardle"), "--disable-admission-plugins=Nope", "--storage-backend=memory", "--data-dir="+t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `disable-admission-plugins plugin "Nope" is unknown`) {
		t.Errorf("wardle --disable-admission-plugins=Nope: %v\n%s", err, out)
	}
}
