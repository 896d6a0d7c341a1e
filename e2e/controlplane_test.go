package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestControlPlaneWithKubectl drives examples/controlplane, the chain
// extensions -> core -> aggregator in one process, with kubectl as one
// would kube-apiserver: the core objects, a service account's token
// authenticating as it, events, the aggregator's APIServices following a
// CRD, a CRD's defaulting, CEL rule, printer columns and scale, and the
// three cascade modes of the garbage collector on configmaps.
func TestControlPlaneWithKubectl(t *testing.T) {
	w := startChain(t)
	// eventually polls kubectl until check accepts its output.
	eventually := func(what string, check func(out string) bool, args ...string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, _, _ := w.kubectlRaw(t.Context(), args...)
			if check(out) {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: kubectl %s = %q", what, strings.Join(args, " "), out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// The core group, served by the middle server.
	w.Kubectl("create", "ns", "team-a")
	w.Kubectl("create", "configmap", "settings", "-n", "team-a", "--from-literal=color=blue")
	if out := w.Kubectl("get", "cm", "settings", "-n", "team-a", "-o", "jsonpath={.data.color}"); out != "blue" {
		t.Errorf("configmap data.color = %q, want blue", out)
	}
	w.Kubectl("create", "secret", "generic", "db", "-n", "team-a", "--from-literal=password=s3cret")
	if out := w.Kubectl("get", "secret", "db", "-n", "team-a", "-o", "jsonpath={.type} {.data.password}"); out != "Opaque czNjcmV0" {
		t.Errorf("secret type and data = %q, want Opaque czNjcmV0", out)
	}
	if msg := w.KubectlFail("create", "configmap", "c", "-n", "nowhere"); !strings.Contains(msg, `namespaces "nowhere" not found`) {
		t.Errorf("a configmap in a namespace that does not exist: %q", msg)
	}
	// Every namespace gets its default ServiceAccount and
	// kube-root-ca.crt, as kube-controller-manager gives them.
	eventually("team-a's default service account and root CA", func(out string) bool {
		return strings.Contains(out, "serviceaccount/default") && strings.Contains(out, "configmap/kube-root-ca.crt")
	}, "get", "sa,cm", "-n", "team-a", "-o", "name")

	// A service account's token authenticates as it (in a kubeconfig of
	// its own: the admin's client certificate would win over --token).
	w.Kubectl("create", "serviceaccount", "robot", "-n", "team-a")
	uid := w.Kubectl("get", "sa", "robot", "-n", "team-a", "-o", "jsonpath={.metadata.uid}")
	token := strings.TrimSpace(w.Kubectl("create", "token", "robot", "-n", "team-a"))
	out, errOut, ok := w.tokenUser("robot", token).Kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.uid}")
	if !ok || out != "system:serviceaccount:team-a:robot "+uid {
		t.Errorf("kubectl auth whoami with robot's token = %q (%s), want the service account and its uid %s", out, errOut, uid)
	}

	// Events, written as a controller's event recorder writes them.
	w.KubectlStdin(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"settings.1","namespace":"team-a"},
	  "involvedObject":{"apiVersion":"v1","kind":"ConfigMap","name":"settings","namespace":"team-a"},
	  "reason":"Tested","message":"the control plane records events","type":"Normal","source":{"component":"e2e"},"count":1}`, "create", "-f", "-")
	if out := w.Kubectl("get", "events", "-n", "team-a"); !strings.Contains(out, "Tested") || !strings.Contains(out, "configmap/settings") ||
		!strings.Contains(out, "the control plane records events") {
		t.Errorf("kubectl get events = %q", out)
	}

	// Discovery spans the three servers.
	res := strings.Join(strings.Fields(w.Kubectl("api-resources", "--no-headers")), " ")
	for _, want := range []string{"configmaps cm v1 true ConfigMap", "namespaces ns v1 false Namespace",
		"customresourcedefinitions crd,crds apiextensions.k8s.io/v1 false CustomResourceDefinition",
		"apiservices apiregistration.k8s.io/v1 false APIService", "leases coordination.k8s.io/v1 true Lease",
		"clusterroles rbac.authorization.k8s.io/v1 false ClusterRole",
		"validatingadmissionpolicies admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy"} {
		if !strings.Contains(res, want) {
			t.Errorf("kubectl api-resources lacks %q:\n%s", want, res)
		}
	}
	// Every built-in group-version has its local APIService, the core
	// group's named "v1." as kube-apiserver's.
	apiservices := w.Kubectl("get", "apiservices")
	for _, want := range []string{"v1.                               Local     True", "v1.apiextensions.k8s.io", "v1.coordination.k8s.io"} {
		if !strings.Contains(apiservices, want) {
			t.Errorf("kubectl get apiservices lacks %q:\n%s", want, apiservices)
		}
	}

	// A CRD: its APIService comes with it (automanaged "true").
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	eventually("the CRD's APIService", func(out string) bool { return strings.TrimSpace(out) == "true 1000 100" },
		"get", "apiservice", "v1.example.com", "-o", `jsonpath={.metadata.labels.kube-aggregator\.kubernetes\.io/automanaged} {.spec.groupPriorityMinimum} {.spec.versionPriority}`)
	// Defaulted, validated by the CEL rule, shown with its columns, scaled.
	w.KubectlStdin("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: team-a}\nspec: {replicas: 2}\n", "create", "-f", "-")
	if out := w.Kubectl("get", "widget", "w1", "-n", "team-a", "-o", "jsonpath={.spec.color}"); out != "blue" {
		t.Errorf("a widget without a color: color %q, want the default blue", out)
	}
	if msg := kubectlStdinFail(t, w, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: team-a}\nspec: {color: black}\n", "create", "-f", "-"); !strings.Contains(msg, "black is not a color") {
		t.Errorf("a widget breaking the CEL rule: %q", msg)
	}
	if out := w.Kubectl("get", "widgets", "-n", "team-a"); !strings.Contains(out, "COLOR") || !strings.Contains(out, "REPLICAS") || !strings.Contains(strings.Join(strings.Fields(out), " "), "w1 blue 2") {
		t.Errorf("kubectl get widgets = %q, want the printer columns", out)
	}
	w.Kubectl("scale", "widget", "w1", "-n", "team-a", "--replicas=5")
	if out := w.Kubectl("get", "widget", "w1", "-n", "team-a", "-o", "jsonpath={.spec.replicas}"); out != "5" {
		t.Errorf("replicas after kubectl scale = %q, want 5", out)
	}
	// Deleting a namespace deletes what is in it, whichever server of the
	// chain serves it: a configmap (core), a widget (extensions) and a
	// rolebinding (RBAC, in the aggregator), then the namespace.
	w.Kubectl("create", "namespace", "team-z")
	w.Kubectl("create", "configmap", "settings", "-n", "team-z")
	w.KubectlStdin("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: wz, namespace: team-z}\n", "create", "-f", "-")
	w.Kubectl("create", "rolebinding", "viewers", "--clusterrole=view", "--user=alice", "-n", "team-z")
	w.Kubectl("delete", "namespace", "team-z", "--wait=false")
	eventually("the namespace deleted", func(out string) bool { return strings.TrimSpace(out) == "" },
		"get", "namespace", "team-z", "--ignore-not-found", "-o", "name")
	for _, kind := range []string{"configmaps", "widgets", "rolebindings"} {
		if out := w.Kubectl("get", kind, "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}"); strings.Contains(out, "team-z/") {
			t.Errorf("%s left in the deleted namespace: %s", kind, out)
		}
	}

	// Deleting the CRD deletes its APIService.
	w.Kubectl("delete", "crd", "widgets.example.com")
	eventually("the CRD's APIService gone", func(out string) bool { return !strings.Contains(out, "example.com") }, "get", "apiservices", "-o", "name")

	// The garbage collector, on configmaps linked by ownerReferences.
	cm := func(name string, owner string) {
		t.Helper()
		refs := ""
		if owner != "" {
			ownerUID := w.Kubectl("get", "cm", owner, "-n", "team-a", "-o", "jsonpath={.metadata.uid}")
			refs = fmt.Sprintf("\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: %s, uid: %s, blockOwnerDeletion: true}", owner, ownerUID)
		}
		w.KubectlStdin(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: team-a%s\n", name, refs), "create", "-f", "-")
	}
	gone := func(out string) bool { return strings.TrimSpace(out) == "" }
	cm("bg-owner", "")
	cm("bg-child", "bg-owner")
	w.Kubectl("delete", "cm", "bg-owner", "-n", "team-a", "--cascade=background")
	eventually("background: the dependent deleted", gone, "get", "cm", "bg-child", "-n", "team-a", "--ignore-not-found", "-o", "name")

	cm("fg-owner", "")
	cm("fg-child", "fg-owner")
	// kubectl waits for the owner, which goes after its dependent.
	w.Kubectl("delete", "cm", "fg-owner", "-n", "team-a", "--cascade=foreground")
	eventually("foreground: the owner deleted", gone, "get", "cm", "fg-owner", "-n", "team-a", "--ignore-not-found", "-o", "name")
	if out := w.Kubectl("get", "cm", "fg-child", "-n", "team-a", "--ignore-not-found", "-o", "name"); !gone(out) {
		t.Errorf("foreground: the dependent %q outlived its owner", out)
	}

	cm("or-owner", "")
	cm("or-child", "or-owner")
	w.Kubectl("delete", "cm", "or-owner", "-n", "team-a", "--cascade=orphan")
	eventually("orphan: the owner deleted", gone, "get", "cm", "or-owner", "-n", "team-a", "--ignore-not-found", "-o", "name")
	eventually("orphan: the dependent kept, its reference removed", func(out string) bool {
		return strings.HasPrefix(out, "or-child") && !strings.Contains(out, "or-owner")
	},
		"get", "cm", "or-child", "-n", "team-a", "-o", "jsonpath={.metadata.name} {.metadata.ownerReferences}")
}
