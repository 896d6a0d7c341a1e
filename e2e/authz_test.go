package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apikit-dev/apikit/certs"
)

var fischersGVR = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "fischers"}

// User is a client certificate issued by the server's development CA.
type User struct {
	w          *Wardle
	Name       string
	Kubeconfig string
}

// NewUser issues a client certificate for name (in groups) from the data
// directory's pki/ca.crt and ca.key and writes a kubeconfig for it.
func (w *Wardle) NewUser(name string, groups ...string) *User {
	w.t.Helper()
	pki := filepath.Join(w.DataDir, "pki")
	certPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		w.t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(pki, "ca.key"))
	if err != nil {
		w.t.Fatal(err)
	}
	ca, err := certs.ParseCA(certPEM, keyPEM)
	if err != nil {
		w.t.Fatal(err)
	}
	pair, err := ca.IssueClient(name, groups, time.Hour)
	if err != nil {
		w.t.Fatal(err)
	}
	path := filepath.Join(w.t.TempDir(), name+".kubeconfig")
	kc := certs.Kubeconfig{Server: fmt.Sprintf("https://127.0.0.1:%d", w.Port), CAPEM: ca.CertPEM, Client: pair, Name: name}
	if err := kc.WriteFile(path); err != nil {
		w.t.Fatal(err)
	}
	return &User{w: w, Name: name, Kubeconfig: path}
}

// Kubectl runs kubectl as the user; it returns stdout, stderr and whether
// kubectl succeeded.
func (u *User) Kubectl(args ...string) (string, string, bool) {
	u.w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.Kubeconfig, "HOME="+filepath.Dir(u.Kubeconfig))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		u.w.t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), err == nil
}

// Dynamic is a client-go dynamic client acting as the user.
func (u *User) Dynamic() dynamic.Interface {
	u.w.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", u.Kubeconfig)
	if err != nil {
		u.w.t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		u.w.t.Fatal(err)
	}
	return c
}

// setUpAlice gives alice, as the admin would with kubectl, a Role in team-a
// (read and create flunders, manage roles and role bindings) and a
// ClusterRole to read fischers, and creates a flunder in team-a and in
// team-b and a fischer.
func setUpAlice(t *testing.T, w *Wardle) *User {
	t.Helper()
	w.Kubectl("create", "role", "flunder-writer", "-n", "team-a", "--verb=get,list,watch,create", "--resource=flunders")
	w.Kubectl("create", "role", "rbac-manager", "-n", "team-a", "--verb=get,list,create,update,patch,delete", "--resource=roles,rolebindings")
	w.Kubectl("create", "rolebinding", "alice-flunders", "-n", "team-a", "--role=flunder-writer", "--user=alice")
	w.Kubectl("create", "rolebinding", "alice-rbac", "-n", "team-a", "--role=rbac-manager", "--user=alice")
	w.Kubectl("create", "clusterrole", "fischer-viewer", "--verb=get,list", "--resource=fischers")
	w.Kubectl("create", "clusterrolebinding", "alice-fischers", "--clusterrole=fischer-viewer", "--user=alice")
	for _, ns := range []string{"team-a", "team-b"} {
		w.KubectlStdin(fmt.Sprintf(flunderYAML, "f1", "x"), "create", "-n", ns, "-f", "-")
	}
	w.KubectlStdin("apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata: {name: fi1}\ndisallowedFlunders: []\n", "create", "-f", "-")
	alice := w.NewUser("alice", "developers")
	waitUntil(t, 5*time.Second, "alice's bindings take effect", func() bool {
		_, _, ok := alice.Kubectl("get", "flunders", "-n", "team-a")
		return ok
	})
	return alice
}

// waitUntil polls ok every 20ms until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// TestRBAC: the default mode serves RBAC; a user with a namespaced Role
// reads flunders in that namespace and not in another, kubectl auth can-i
// answers what the server really does, escalation is refused, and a
// revoked binding stops access within a second.
func TestRBAC(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")

	t.Run("bootstrap roles", func(t *testing.T) {
		out := w.Kubectl("get", "clusterroles")
		for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user",
			"system:public-info-viewer", "wardle:aggregate-to-view", "wardle:aggregate-to-edit"} {
			if !strings.Contains(out, "\n"+name+" ") {
				t.Errorf("get clusterroles lacks %s:\n%s", name, out)
			}
		}
		out = w.Kubectl("get", "clusterrolebindings", "-o", "wide")
		if !strings.Contains(out, "ClusterRole/cluster-admin") || !strings.Contains(out, "system:masters") {
			t.Errorf("get clusterrolebindings:\n%s", out)
		}
		// view aggregates wardle:aggregate-to-view, edit view and wardle:aggregate-to-edit.
		waitUntil(t, 5*time.Second, "aggregation fills edit", func() bool {
			out := w.Kubectl("get", "clusterrole", "edit", "-o", "jsonpath={.rules}")
			return strings.Contains(out, `"watch"`) && strings.Contains(out, `"deletecollection"`)
		})
		if w.Kubectl("auth", "can-i", "delete", "clusterroles") != "yes\n" {
			t.Error("the admin (system:masters) cannot delete clusterroles")
		}
	})

	alice := setUpAlice(t, w)

	t.Run("namespaced role", func(t *testing.T) {
		out, errOut, ok := alice.Kubectl("get", "flunders", "-n", "team-a", "-o", "name")
		if !ok || out != "flunder.wardle.example.com/f1\n" {
			t.Errorf("alice get flunders -n team-a: %q %s", out, errOut)
		}
		_, errOut, ok = alice.Kubectl("get", "flunders", "-n", "team-b")
		want := `Error from server (Forbidden): flunders.wardle.example.com is forbidden: User "alice" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "team-b"`
		if ok || strings.TrimSpace(errOut) != want {
			t.Errorf("alice get flunders -n team-b:\n got: %s\nwant: %s", errOut, want)
		}
	})

	t.Run("auth can-i matches real access", func(t *testing.T) {
		client := alice.Dynamic()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		type target struct {
			args     []string // kubectl auth can-i's resource arguments
			resource dynamic.ResourceInterface
			name     string
			sample   func() *unstructured.Unstructured
		}
		flunderIn := func(ns string) target {
			return target{[]string{"flunders", "-n", ns}, client.Resource(flundersGVR).Namespace(ns), "f1",
				func() *unstructured.Unstructured { f := newFlunder(ns, "", "y"); f.SetGenerateName("can-i-"); return f }}
		}
		targets := []target{flunderIn("team-a"), flunderIn("team-b"),
			{[]string{"fischers"}, client.Resource(fischersGVR), "fi1", func() *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "Fischer",
					"metadata": map[string]any{"generateName": "can-i-"}}}
			}}}
		// The real request of each verb; only a Forbidden answer means no.
		do := func(tg target, verb string) error {
			switch verb {
			case "get":
				_, err := tg.resource.Get(ctx, tg.name, metav1.GetOptions{})
				return err
			case "list":
				_, err := tg.resource.List(ctx, metav1.ListOptions{})
				return err
			case "watch":
				wi, err := tg.resource.Watch(ctx, metav1.ListOptions{})
				if err == nil {
					wi.Stop()
				}
				return err
			case "create":
				_, err := tg.resource.Create(ctx, tg.sample(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			case "update":
				obj := tg.sample()
				obj.SetName(tg.name)
				obj.SetGenerateName("")
				_, err := tg.resource.Update(ctx, obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			case "patch":
				_, err := tg.resource.Patch(ctx, tg.name, types.MergePatchType, []byte(`{"metadata":{"labels":{"p":"q"}}}`),
					metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			case "delete":
				return tg.resource.Delete(ctx, tg.name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			case "deletecollection":
				return tg.resource.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{})
			}
			t.Fatalf("verb %s", verb)
			return nil
		}
		pairs, yes := 0, 0
		for _, tg := range targets {
			for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
				out, errOut, _ := alice.Kubectl(append([]string{"auth", "can-i", verb}, tg.args...)...)
				// Exactly "yes" or "no", as kube-apiserver answers: RBAC
				// gives no reason when every binding resolves, and
				// scripts compare this output.
				canI := strings.TrimSuffix(out, "\n")
				err := do(tg, verb)
				allowed := !apierrors.IsForbidden(err)
				if canI != "yes" && canI != "no" {
					t.Errorf("can-i %s %v: %q %s", verb, tg.args, out, errOut)
				}
				if (canI == "yes") != allowed {
					t.Errorf("can-i %s %v says %s, the request got %v", verb, tg.args, canI, err)
				}
				pairs++
				if allowed {
					yes++
				}
			}
		}
		if pairs < 20 || yes == 0 || yes == pairs {
			t.Errorf("%d pairs, %d allowed: not a useful comparison", pairs, yes)
		}
	})

	t.Run("auth can-i --list", func(t *testing.T) {
		out, errOut, ok := alice.Kubectl("auth", "can-i", "--list", "-n", "team-a")
		if !ok {
			t.Fatalf("can-i --list: %s", errOut)
		}
		for _, want := range []string{
			`flunders.wardle.example.com\s+\[\]\s+\[\]\s+\[get list watch create\]`,
			`fischers.wardle.example.com\s+\[\]\s+\[\]\s+\[get list\]`,
			`roles.rbac.authorization.k8s.io\s+\[\]\s+\[\]\s+\[get list create update patch delete\]`,
			`selfsubjectaccessreviews.authorization.k8s.io\s+\[\]\s+\[\]\s+\[create\]`,
			`\s+\[/apis/\*\]\s+\[\]\s+\[get\]`,
		} {
			if !regexpMatch(want, out) {
				t.Errorf("can-i --list lacks %s:\n%s", want, out)
			}
		}
		out, _, _ = alice.Kubectl("auth", "can-i", "--list", "-n", "team-b")
		if strings.Contains(out, "flunders") {
			t.Errorf("can-i --list -n team-b lists flunders:\n%s", out)
		}
	})

	t.Run("escalation refused", func(t *testing.T) {
		_, errOut, ok := alice.Kubectl("create", "role", "flunder-deleter", "-n", "team-a", "--verb=delete", "--resource=flunders")
		if ok || !strings.Contains(errOut, `roles.rbac.authorization.k8s.io "flunder-deleter" is forbidden: user "alice" (groups=["developers" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) ||
			!strings.Contains(errOut, `{APIGroups:["wardle.example.com"], Resources:["flunders"], Verbs:["delete"]}`) {
			t.Errorf("escalating role: ok=%v %s", ok, errOut)
		}
		// What she holds she may grant.
		if _, errOut, ok := alice.Kubectl("create", "role", "flunder-reader", "-n", "team-a", "--verb=get,list", "--resource=flunders"); !ok {
			t.Errorf("non-escalating role: %s", errOut)
		}
		if _, errOut, ok := alice.Kubectl("create", "rolebinding", "bob-reads", "-n", "team-a", "--role=flunder-reader", "--user=bob"); !ok {
			t.Errorf("binding a role she holds: %s", errOut)
		}
		_, errOut, ok = alice.Kubectl("create", "rolebinding", "bob-admin", "-n", "team-a", "--clusterrole=admin", "--user=bob")
		if ok || !strings.Contains(errOut, `rolebindings.rbac.authorization.k8s.io "bob-admin" is forbidden: user "alice"`) {
			t.Errorf("binding admin: ok=%v %s", ok, errOut)
		}
		// The admin may let her bind admin without holding it.
		w.Kubectl("create", "role", "admin-binder", "-n", "team-a", "--verb=bind", "--resource=clusterroles", "--resource-name=admin")
		w.Kubectl("create", "rolebinding", "alice-binds-admin", "-n", "team-a", "--role=admin-binder", "--user=alice")
		waitUntil(t, 5*time.Second, "bind permission", func() bool {
			_, _, ok := alice.Kubectl("create", "rolebinding", "bob-admin", "-n", "team-a", "--clusterrole=admin", "--user=bob")
			return ok
		})
	})

	t.Run("relabelling cluster-admin refused", func(t *testing.T) {
		// mallory may patch clusterroles, nothing else: labelling
		// cluster-admin to aggregate into view would hand view everything.
		w.Kubectl("create", "clusterrole", "clusterrole-patcher", "--verb=get,patch", "--resource=clusterroles")
		w.Kubectl("create", "clusterrolebinding", "mallory-patches", "--clusterrole=clusterrole-patcher", "--user=mallory")
		mallory := w.NewUser("mallory")
		waitUntil(t, 5*time.Second, "mallory's binding takes effect", func() bool {
			out, _, _ := mallory.Kubectl("auth", "can-i", "patch", "clusterroles")
			return out == "yes\n"
		})
		_, errOut, ok := mallory.Kubectl("label", "clusterrole", "cluster-admin", "rbac.authorization.k8s.io/aggregate-to-view=true")
		if ok || !strings.Contains(errOut, `clusterroles.rbac.authorization.k8s.io "cluster-admin" is forbidden: user "mallory" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) {
			t.Errorf("relabelling cluster-admin: ok=%v %s", ok, errOut)
		}
		if labels := w.Kubectl("get", "clusterrole", "cluster-admin", "-o", "jsonpath={.metadata.labels}"); strings.Contains(labels, "aggregate-to-view") {
			t.Errorf("cluster-admin labelled: %s", labels)
		}
		// What garbage collection writes needs nothing more.
		if _, errOut, ok := mallory.Kubectl("patch", "clusterrole", "cluster-admin", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/keep"]}}`); !ok {
			t.Errorf("a finalizer on cluster-admin: %s", errOut)
		}
		w.Kubectl("patch", "clusterrole", "cluster-admin", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	})

	t.Run("auth can-i names a missing role", func(t *testing.T) {
		// The one denial kube-apiserver's RBAC gives a reason for.
		w.Kubectl("create", "clusterrolebinding", "dora-ghost", "--clusterrole=no-such-role", "--user=dora")
		dora := w.NewUser("dora")
		want := "no - RBAC: clusterrole.rbac.authorization.k8s.io \"no-such-role\" not found\n"
		waitUntil(t, 5*time.Second, "dora's binding is seen", func() bool {
			out, _, _ := dora.Kubectl("auth", "can-i", "get", "flunders", "-n", "team-a")
			return out == want
		})
	})

	t.Run("revoked binding stops access within a second", func(t *testing.T) {
		client := alice.Dynamic().Resource(flundersGVR).Namespace("team-a")
		ctx := context.Background()
		if _, err := client.List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("before: %v", err)
		}
		w.Kubectl("delete", "rolebinding", "alice-flunders", "-n", "team-a")
		took := waitUntil(t, time.Second, "revocation", func() bool {
			_, err := client.List(ctx, metav1.ListOptions{})
			return apierrors.IsForbidden(err)
		})
		t.Logf("revoked in %v", took)
	})
}

// sarServer is a SubjectAccessReview webhook served by the test on
// loopback: it allows carol to list flunders, denies alice any access to
// flunders and has no opinion on anything else.
type sarServer struct {
	*httptest.Server
	mu    sync.Mutex
	asked []string
}

func newSARServer(t *testing.T) *sarServer {
	s := &sarServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sar struct {
			APIVersion string         `json:"apiVersion"`
			Kind       string         `json:"kind"`
			Spec       map[string]any `json:"spec"`
			Status     map[string]any `json:"status"`
		}
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil || sar.Kind != "SubjectAccessReview" || sar.APIVersion != "authorization.k8s.io/v1" {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		user, _ := sar.Spec["user"].(string)
		ra, _ := sar.Spec["resourceAttributes"].(map[string]any)
		s.mu.Lock()
		s.asked = append(s.asked, fmt.Sprintf("%s %v %v", user, ra["verb"], ra["resource"]))
		s.mu.Unlock()
		switch {
		case user == "carol" && ra["verb"] == "list" && ra["resource"] == "flunders":
			sar.Status = map[string]any{"allowed": true, "reason": "carol may list flunders"}
		case user == "alice" && ra["resource"] == "flunders":
			sar.Status = map[string]any{"allowed": false, "denied": true, "reason": "the webhook denies alice flunders"}
		default:
			sar.Status = map[string]any{"allowed": false}
		}
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(s.Close)
	return s
}

// kubeconfig writes a kubeconfig pointing at the webhook.
func (s *sarServer) kubeconfig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := (certs.Kubeconfig{Server: s.URL + "/authorize", CAPEM: ca}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func (s *sarServer) askedAbout(user string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.asked {
		if strings.HasPrefix(a, user+" ") {
			return true
		}
	}
	return false
}

// TestWebhookAuthorizer: a webhook served on loopback is consulted, and
// the order of --authorization-mode decides between it and RBAC.
func TestWebhookAuthorizer(t *testing.T) {
	hook := newSARServer(t)
	kc := hook.kubeconfig(t)

	for _, tc := range []struct {
		modes string
		// aliceAllowed: RBAC allows alice in team-a and the webhook denies
		// her, so the first of the two decides.
		aliceAllowed bool
	}{
		{"RBAC,Webhook", true},
		{"Webhook,RBAC", false},
	} {
		t.Run(tc.modes, func(t *testing.T) {
			w := StartWardle(t, "--storage-backend=memory", "--authorization-mode="+tc.modes, "--authorization-webhook-config-file="+kc)
			carol := w.NewUser("carol")
			if _, errOut, ok := carol.Kubectl("get", "flunders", "-n", "anywhere"); !ok {
				t.Errorf("carol, allowed by the webhook: %s", errOut)
			}
			if !hook.askedAbout("carol") {
				t.Error("the webhook was not consulted")
			}
			_, errOut, ok := carol.Kubectl("delete", "flunder", "x", "-n", "anywhere")
			if ok || !strings.Contains(errOut, `User "carol" cannot delete resource "flunders"`) {
				t.Errorf("carol delete: ok=%v %s", ok, errOut)
			}

			alice := setUpAliceForWebhook(t, w)
			_, errOut, ok = alice.Kubectl("get", "flunders", "-n", "team-a")
			if ok != tc.aliceAllowed {
				t.Errorf("alice with %s: allowed %v, want %v: %s", tc.modes, ok, tc.aliceAllowed, errOut)
			}
			if !tc.aliceAllowed && !strings.Contains(errOut, "the webhook denies alice flunders") {
				t.Errorf("alice's denial lacks the webhook's reason: %s", errOut)
			}
		})
	}
}

// setUpAliceForWebhook binds a Role in team-a to the group readers and
// returns alice, in that group, once RBAC has the binding: the admin asks
// about another member of readers, on whom the webhook has no opinion, so
// that RBAC answers whatever the order of the modes.
func setUpAliceForWebhook(t *testing.T, w *Wardle) *User {
	t.Helper()
	w.Kubectl("create", "role", "flunder-reader", "-n", "team-a", "--verb=get,list", "--resource=flunders")
	w.Kubectl("create", "rolebinding", "readers", "-n", "team-a", "--role=flunder-reader", "--group=readers")
	sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"probe","groups":["readers"],` +
		`"resourceAttributes":{"namespace":"team-a","verb":"list","group":"wardle.example.com","resource":"flunders"}}}`
	cfg := w.RESTConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "the binding reaches RBAC", func() bool {
		resp, err := client.Post(cfg.Host+"/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json", strings.NewReader(sar))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"allowed":true`)
	})
	return w.NewUser("alice", "readers")
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
