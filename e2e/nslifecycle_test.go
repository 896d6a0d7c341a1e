package e2e

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// TestNamespaceLifecycleKubectl: wardle --core-api creates kube's system
// namespaces at start and refuses, with kube-apiserver's messages, to
// delete the immortal ones and to create objects (configmaps and flunders
// alike) in a namespace that does not exist or is being deleted; a new
// namespace gets the default ServiceAccount and the kube-root-ca.crt
// ConfigMap with the CA of the kubeconfig, both put back when deleted.
func TestNamespaceLifecycleKubectl(t *testing.T) {
	w := StartWardle(t, "--core-api")

	out := w.Kubectl("get", "ns", "-o", "name")
	for _, n := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if !strings.Contains(out, "namespace/"+n+"\n") {
			t.Errorf("kubectl get ns lacks %s:\n%s", n, out)
		}
	}
	for _, n := range []string{"default", "kube-system", "kube-public"} {
		if msg := w.KubectlFail("delete", "ns", n); !strings.Contains(msg, `namespaces "`+n+`" is forbidden: this namespace may not be deleted`) {
			t.Errorf("kubectl delete ns %s: %q", n, msg)
		}
	}
	// Objects go in default without a namespace given.
	w.Kubectl("create", "configmap", "plain", "--from-literal=a=b")

	flunder := func(ns, name string) string {
		return `{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"` + name + `","namespace":"` + ns + `"}}`
	}
	if msg := w.KubectlFail("create", "configmap", "c", "-n", "missing", "--from-literal=a=b"); !strings.Contains(msg, `namespaces "missing" not found`) {
		t.Errorf("configmap in a missing namespace: %q", msg)
	}
	if msg := w.KubectlStdinFail(flunder("missing", "f"), "create", "-f", "-"); !strings.Contains(msg, `namespaces "missing" not found`) {
		t.Errorf("flunder in a missing namespace: %q", msg)
	}

	w.Kubectl("create", "ns", "doomed")
	w.Kubectl("create", "configmap", "inside", "-n", "doomed", "--from-literal=a=b")
	w.KubectlStdin(flunder("doomed", "f1"), "create", "-f", "-")
	// A finalizer of its own keeps one configmap, and so the namespace.
	w.KubectlStdin(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","namespace":"doomed","finalizers":["example.com/hold"]}}`, "create", "-f", "-")
	w.Kubectl("delete", "ns", "doomed", "--wait=false")
	if out := w.Kubectl("get", "ns", "doomed", "-o", "jsonpath={.status.phase}"); out != "Terminating" {
		t.Fatalf("namespace doomed after delete: phase %q, want Terminating", out)
	}
	if msg := w.KubectlFail("create", "configmap", "late", "-n", "doomed", "--from-literal=a=b"); !strings.Contains(msg, `configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated`) {
		t.Errorf("configmap in a terminating namespace: %q", msg)
	}
	if msg := w.KubectlStdinFail(flunder("doomed", "f2"), "create", "-f", "-"); !strings.Contains(msg, `flunders.wardle.example.com "f2" is forbidden: unable to create new content in namespace doomed because it is being terminated`) {
		t.Errorf("flunder in a terminating namespace: %q", msg)
	}
	// The namespace controller deletes the content, says what holds the
	// namespace, and removes it once the finalizer is gone.
	poll(t, "the content deleted, the finalizer reported", func() (bool, string) {
		out := w.Kubectl("get", "cm,flunders,sa", "-n", "doomed", "-o", "name")
		cond := w.Kubectl("get", "ns", "doomed", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}`)
		return strings.TrimSpace(out) == "configmap/held" &&
			cond == "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances", out + " | " + cond
	})
	w.Kubectl("patch", "configmap", "held", "-n", "doomed", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	poll(t, "the namespace gone", func() (bool, string) {
		_, errOut, err := w.kubectlRaw(t.Context(), "get", "ns", "doomed")
		return err != nil && strings.Contains(errOut, `namespaces "doomed" not found`), errOut
	})

	caData := w.Kubectl("config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
	ca, err := base64.StdEncoding.DecodeString(strings.TrimSpace(caData))
	if err != nil || len(ca) == 0 {
		t.Fatalf("the kubeconfig's CA %q: %v", caData, err)
	}
	w.Kubectl("create", "ns", "team-b")
	waitDefaults := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			sa, _, saErr := w.kubectlRaw(t.Context(), "get", "sa", "default", "-n", "team-b", "-o", "name")
			got, _, cmErr := w.kubectlRaw(t.Context(), "get", "cm", "kube-root-ca.crt", "-n", "team-b", "-o", "jsonpath={.data.ca\\.crt}")
			if saErr == nil && strings.TrimSpace(sa) == "serviceaccount/default" && cmErr == nil && got == string(ca) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: after 60s serviceaccount %q (%v), kube-root-ca.crt %q (%v)", what, sa, saErr, got, cmErr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitDefaults("a new namespace")
	w.Kubectl("delete", "sa", "default", "-n", "team-b")
	w.Kubectl("delete", "cm", "kube-root-ca.crt", "-n", "team-b")
	waitDefaults("after deleting them")
}

// poll waits up to 60 s for cond, which says what it saw.
func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 60s; saw %s", what, saw)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
