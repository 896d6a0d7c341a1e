package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startControlPlaneWithWardle starts examples/controlplane and a wardle in
// another process registered behind its aggregator as the APIServices of
// wardle.example.com (Service wardle/api): wardle trusts the control
// plane's front-proxy certificate and asks it to review tokens and access,
// as a delegated API server behind kube-apiserver does. It returns them
// once both APIServices are available.
func startControlPlaneWithWardle(t *testing.T) (cp, backend *Wardle, auditLog string) {
	t.Helper()
	backend = &Wardle{t: t, DataDir: t.TempDir(), Port: freePort(t)}
	cp = &Wardle{t: t, DataDir: t.TempDir(), Port: freePort(t), Binary: "controlplane", Args: []string{
		"--storage-backend=memory",
		fmt.Sprintf("--service-endpoint=wardle/api=127.0.0.1:%d", backend.Port),
	}}
	cp.Start()
	t.Cleanup(cp.Stop)
	auditLog = filepath.Join(t.TempDir(), "wardle-audit.log")
	backend.Args = []string{
		"--requestheader-client-ca-file=" + filepath.Join(cp.DataDir, "pki", "front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--authentication-kubeconfig=" + cp.Kubeconfig(),
		"--authorization-kubeconfig=" + cp.Kubeconfig(),
		"--audit-log-path=" + auditLog,
	}
	backend.Start()
	t.Cleanup(backend.Stop)
	ca, err := os.ReadFile(filepath.Join(backend.DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for version, priority := range map[string]int{"v1beta1": 15, "v1alpha1": 10} {
		cp.KubectlStdin(fmt.Sprintf(`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"%s.wardle.example.com"},
		  "spec":{"group":"wardle.example.com","version":"%s","caBundle":"%s","service":{"namespace":"wardle","name":"api"},
		  "groupPriorityMinimum":1000,"versionPriority":%d}}`, version, version, base64.StdEncoding.EncodeToString(ca), priority), "create", "-f", "-")
	}
	for _, name := range []string{"v1beta1.wardle.example.com", "v1alpha1.wardle.example.com"} {
		poll(t, name+" available", func() (bool, string) {
			out, _, _ := cp.kubectlRaw(t.Context(), "get", "apiservice", name, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
			return out == "True", out
		})
	}
	return cp, backend, auditLog
}

// flunderIn is a flunder in a namespace, with optional ownerReferences
// (JSON).
func flunderIn(ns, name, owners string) string {
	if owners == "" {
		owners = "[]"
	}
	return fmt.Sprintf(`{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":%q,"namespace":%q,"ownerReferences":%s},"spec":{"flunderReference":"x"}}`,
		name, ns, owners)
}

// TestControlPlaneAggregatedContent: the namespace controller and the
// garbage collector of examples/controlplane reach the resources of an
// aggregated API server in another process (wardle), as
// kube-controller-manager's do through kube-apiserver: `kubectl delete ns`
// removes the namespace's flunders and then the namespace (kept, with
// kube's conditions, while a finalizer holds one); a flunder owned
// by a ConfigMap goes with it (background and foreground) or loses the
// reference (orphan); while wardle is down the namespace stays Terminating
// with NamespaceDeletionDiscoveryFailure and finishes once it is back;
// wardle sees the deletes made by system:kube-controller-manager.
func TestControlPlaneAggregatedContent(t *testing.T) {
	cp, backend, auditLog := startControlPlaneWithWardle(t)
	gone := func(w *Wardle, args ...string) func() (bool, string) {
		return func() (bool, string) {
			out, errOut, err := w.kubectlRaw(t.Context(), args...)
			return err != nil && strings.Contains(errOut, "NotFound") || err != nil && strings.Contains(errOut, "not found"), out + errOut
		}
	}

	t.Run("garbage collection", func(t *testing.T) {
		cp.Kubectl("create", "ns", "owners")
		for _, mode := range []string{"background", "foreground", "orphan"} {
			cp.Kubectl("create", "configmap", "owner-"+mode, "-n", "owners")
			uid := cp.Kubectl("get", "cm", "owner-"+mode, "-n", "owners", "-o", "jsonpath={.metadata.uid}")
			owner := fmt.Sprintf(`[{"apiVersion":"v1","kind":"ConfigMap","name":"owner-%s","uid":%q,"blockOwnerDeletion":true}]`, mode, uid)
			cp.KubectlStdin(flunderIn("owners", "dep-"+mode, owner), "create", "-f", "-")
		}
		// Let the collector's informer of flunders (started when the
		// APIService became available) see the dependents before their
		// owners go: a dependent seen only after its owner is gone is
		// collected too, but orphaning must find it.
		poll(t, "the flunders listed", func() (bool, string) {
			out, _, _ := cp.kubectlRaw(t.Context(), "get", "flunders", "-n", "owners", "-o", "name")
			return strings.Count(out, "flunder.wardle.example.com/dep-") == 3, out
		})
		for _, mode := range []string{"background", "foreground", "orphan"} {
			cp.Kubectl("delete", "cm", "owner-"+mode, "-n", "owners", "--cascade="+mode, "--wait=false")
		}
		poll(t, "the background dependent deleted in wardle", gone(backend, "get", "flunder", "dep-background", "-n", "owners"))
		poll(t, "the foreground dependent deleted in wardle", gone(backend, "get", "flunder", "dep-foreground", "-n", "owners"))
		poll(t, "the foreground owner deleted after its dependent", gone(cp, "get", "cm", "owner-foreground", "-n", "owners"))
		poll(t, "the orphan owner deleted", gone(cp, "get", "cm", "owner-orphan", "-n", "owners"))
		if out := backend.Kubectl("get", "flunder", "dep-orphan", "-n", "owners", "-o", "jsonpath={.metadata.ownerReferences}"); out != "" {
			t.Errorf("the orphaned flunder keeps ownerReferences %s", out)
		}
	})

	t.Run("namespace deletion", func(t *testing.T) {
		cp.Kubectl("create", "ns", "team-x")
		cp.KubectlStdin(flunderIn("team-x", "f1", ""), "create", "-f", "-")
		cp.KubectlStdin(flunderIn("team-x", "f2", ""), "create", "-f", "-")
		held := strings.Replace(flunderIn("team-x", "held", ""), `"ownerReferences":[]`, `"finalizers":["example.com/hold"]`, 1)
		cp.KubectlStdin(held, "create", "-f", "-")
		cp.Kubectl("delete", "ns", "team-x", "--wait=false")
		poll(t, "team-x's flunders deleted in wardle but the held one", func() (bool, string) {
			out := backend.Kubectl("get", "flunders", "-n", "team-x", "-o", "name")
			return strings.TrimSpace(out) == "flunder.wardle.example.com/held", out
		})
		poll(t, "team-x's conditions name the held flunder", func() (bool, string) {
			out, _, _ := cp.kubectlRaw(t.Context(), "get", "ns", "team-x", "-o",
				`jsonpath={.status.conditions[?(@.type=="NamespaceContentRemaining")].message}|{.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}`)
			return out == "Some resources are remaining: flunders.wardle.example.com has 1 resource instances|"+
				"Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances", out
		})
		backend.Kubectl("patch", "flunder", "held", "-n", "team-x", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		poll(t, "team-x deleted", gone(cp, "get", "ns", "team-x"))
	})

	t.Run("wardle unavailable", func(t *testing.T) {
		cp.Kubectl("create", "ns", "team-y")
		cp.KubectlStdin(flunderIn("team-y", "f1", ""), "create", "-f", "-")
		backend.Stop()
		poll(t, "v1beta1.wardle.example.com unavailable", func() (bool, string) {
			out, _, _ := cp.kubectlRaw(t.Context(), "get", "apiservice", "v1beta1.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
			return out == "False", out
		})
		cp.Kubectl("delete", "ns", "team-y", "--wait=false")
		const want = "Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: " +
			"wardle.example.com/v1alpha1: stale GroupVersion discovery: wardle.example.com/v1alpha1, " +
			"wardle.example.com/v1beta1: stale GroupVersion discovery: wardle.example.com/v1beta1"
		poll(t, "team-y's NamespaceDeletionDiscoveryFailure", func() (bool, string) {
			out, _, _ := cp.kubectlRaw(t.Context(), "get", "ns", "team-y", "-o",
				`jsonpath={.status.phase}|{.status.conditions[?(@.type=="NamespaceDeletionDiscoveryFailure")].status}|{.status.conditions[?(@.type=="NamespaceDeletionDiscoveryFailure")].reason}|{.status.conditions[?(@.type=="NamespaceDeletionDiscoveryFailure")].message}`)
			return out == "Terminating|True|DiscoveryFailed|"+want, out
		})
		backend.Start()
		poll(t, "team-y deleted once wardle is back", gone(cp, "get", "ns", "team-y"))
		if out := backend.Kubectl("get", "flunders", "-n", "team-y", "-o", "name"); out != "" {
			t.Errorf("team-y's flunders after its deletion: %q", out)
		}
	})

	// Wardle authorized the controllers' deletes as the control plane's
	// own identity, named in the front-proxy headers.
	var saw []string
	for _, ev := range readAudit(t, auditLog) {
		if ev.Stage == "ResponseComplete" && (ev.Verb == "deletecollection" || ev.Verb == "delete") {
			saw = append(saw, ev.User.Username+" "+ev.Verb+" "+ev.RequestURI)
		}
	}
	joined := strings.Join(saw, "\n")
	for _, want := range []string{
		"system:kube-controller-manager deletecollection /apis/wardle.example.com/v1beta1/namespaces/team-x/flunders",
		"system:kube-controller-manager delete /apis/wardle.example.com/v1beta1/namespaces/owners/flunders/dep-background",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("wardle's audit log lacks %q:\n%s", want, joined)
		}
	}
}
