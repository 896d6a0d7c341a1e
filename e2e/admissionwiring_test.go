package e2e

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
)

// serviceWebhooks serves admission webhooks over TLS on 127.0.0.1 with a
// certificate for the Service name, as a webhook behind a Service has:
// /deny refuses, /patch answers every request with a patch, /record
// allows; each records the requests it was sent.
type serviceWebhooks struct {
	*httptest.Server
	caBundle string
	mu       sync.Mutex
	requests map[string][]map[string]any
}

func newServiceWebhooks(t *testing.T, serviceDNSName string) *serviceWebhooks {
	t.Helper()
	ca, err := certs.NewCA("e2e webhook CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.IssueServing([]string{serviceDNSName}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	sw := &serviceWebhooks{caBundle: base64.StdEncoding.EncodeToString(ca.CertPEM), requests: map[string][]map[string]any{}}
	sw.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review map[string]any
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, _ := review["request"].(map[string]any)
		sw.mu.Lock()
		sw.requests[r.URL.Path] = append(sw.requests[r.URL.Path], req)
		sw.mu.Unlock()
		resp := map[string]any{"uid": req["uid"], "allowed": true}
		switch r.URL.Path {
		case "/deny":
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "message": fmt.Sprintf("namespace %v is hooked", req["namespace"])}
		case "/patch":
			resp["patchType"] = "JSONPatch"
			resp["patch"] = base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/annotations","value":{"patched":"yes"}}]`))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	sw.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	sw.StartTLS()
	t.Cleanup(sw.Close)
	return sw
}

// sent returns the requests path was sent.
func (sw *serviceWebhooks) sent(path string) []map[string]any {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return append([]map[string]any(nil), sw.requests[path]...)
}

// serviceWebhookYAML is one webhook reached through the Service
// e2e-hooks/webhook at path, for flunders' operation op.
func serviceWebhookYAML(name, path, caBundle, op, selectors string) string {
	return fmt.Sprintf(`- name: %s.e2e.example.com
  clientConfig:
    service:
      namespace: e2e-hooks
      name: webhook
      path: %s
    caBundle: %s
  rules:
  - operations: [%q]
    apiGroups: ["wardle.example.com"]
    apiVersions: ["v1beta1"]
    resources: ["flunders"]
%s  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: ["v1"]
`, name, path, caBundle, op, selectors)
}

// TestAdmissionWebhookWiring drives wardle --core-api with kubectl: webhooks
// named by a Service are reached through --service-endpoint (the TLS
// server name is the Service's), a namespaceSelector matches the labels
// of the served namespaces (one created a moment before included), and on
// DELETE a mutating webhook gets the object as oldObject with kubectl's
// DeleteOptions, its patch refused as kube-apiserver refuses it.
func TestAdmissionWebhookWiring(t *testing.T) {
	sw := newServiceWebhooks(t, "webhook.e2e-hooks.svc")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(sw.URL, "https://"))
	w := StartWardle(t, "--core-api", "--storage-backend=memory", "--service-endpoint=e2e-hooks/webhook=127.0.0.1:"+port)
	w.Kubectl("create", "namespace", "hooked")
	w.Kubectl("label", "namespace", "hooked", "webhook=on")
	w.Kubectl("create", "namespace", "plain")

	nsSelector := "  namespaceSelector:\n    matchLabels:\n      webhook: \"on\"\n"
	w.KubectlStdin("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: wiring\nwebhooks:\n"+
		serviceWebhookYAML("ns", "/deny", sw.caBundle, "CREATE", nsSelector)+
		serviceWebhookYAML("record-delete", "/record", sw.caBundle, "DELETE", "  objectSelector:\n    matchLabels:\n      case: delete\n"),
		"apply", "-f", "-")
	w.KubectlStdin("apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: wiring\nwebhooks:\n"+
		serviceWebhookYAML("patch-delete", "/patch", sw.caBundle, "DELETE", "  objectSelector:\n    matchLabels:\n      case: patch-delete\n"),
		"apply", "-f", "-")
	flunder := func(ns, name, c string) (string, string, error) {
		return w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, name, c), "create", "-n", ns, "-f", "-")
	}

	t.Run("service reference and namespaceSelector", func(t *testing.T) {
		want := `admission webhook "ns.e2e.example.com" denied the request: namespace hooked is hooked`
		// In effect once the informer has the configuration.
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			_, errOut, err := flunder("hooked", fmt.Sprintf("f%d", i), "none")
			if err != nil && strings.Contains(errOut, want) {
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("create in the labelled namespace: %v\n%s", err, errOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, errOut, err := flunder("plain", "free", "none"); err != nil {
			t.Errorf("create in the unlabelled namespace: %v\n%s", err, errOut)
		}
		for _, req := range sw.sent("/deny") {
			if req["namespace"] != "hooked" {
				t.Errorf("the webhook was called for namespace %v", req["namespace"])
			}
		}
	})
	t.Run("a namespace created a moment ago", func(t *testing.T) {
		w.KubectlStdin("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fresh\n  labels:\n    webhook: \"on\"\n", "create", "-f", "-")
		_, errOut, err := flunder("fresh", "new", "none")
		if want := `admission webhook "ns.e2e.example.com" denied the request: namespace fresh is hooked`; err == nil || !strings.Contains(errOut, want) {
			t.Errorf("create in a namespace just labelled: %v\n%s\nwant %s", err, errOut, want)
		}
	})
	t.Run("DELETE", func(t *testing.T) {
		if _, errOut, err := flunder("plain", "gone", "delete"); err != nil {
			t.Fatalf("create: %v\n%s", err, errOut)
		}
		w.Kubectl("delete", "flunder", "-n", "plain", "gone")
		sent := sw.sent("/record")
		if len(sent) != 1 {
			t.Fatalf("the DELETE webhook was sent %d requests", len(sent))
		}
		req := sent[0]
		old, _ := req["oldObject"].(map[string]any)
		md, _ := old["metadata"].(map[string]any)
		opts, _ := req["options"].(map[string]any)
		if req["operation"] != "DELETE" || req["object"] != nil || md["name"] != "gone" ||
			opts["kind"] != "DeleteOptions" || opts["apiVersion"] != "meta.k8s.io/v1" || opts["propagationPolicy"] != "Background" {
			t.Errorf("DELETE review request %v", req)
		}

		// The mutating configuration is in effect once its informer has
		// it: until then a delete passes.
		want := `Internal error occurred: admission webhook "patch-delete.e2e.example.com" attempted to modify the object, which is not supported for this operation`
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			name := fmt.Sprintf("kept-%d", i)
			if _, errOut, err := flunder("plain", name, "patch-delete"); err != nil {
				t.Fatalf("create: %v\n%s", err, errOut)
			}
			_, errOut, err := w.kubectlRaw(t.Context(), "delete", "flunder", "-n", "plain", name)
			if err != nil && strings.Contains(errOut, want) {
				if got := w.Kubectl("get", "flunder", "-n", "plain", name, "-o", "name"); strings.TrimSpace(got) != "flunder.wardle.example.com/"+name {
					t.Errorf("the refused delete deleted: %q", got)
				}
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("delete with a patching webhook: %v\n%s\nwant %s", err, errOut, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
