package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/apikit-dev/apikit/storage/embedded"
)

// TestCoreGroupKubectl drives wardle --core-api's core group with kubectl
// as one would kube-apiserver's: kubectl's typed clients post these kinds
// in protobuf, discovery is /api and /api/v1, tables are kubectl's.
func TestCoreGroupKubectl(t *testing.T) {
	w := StartWardle(t, "--core-api")

	w.Kubectl("create", "ns", "team-a")
	if out := w.Kubectl("get", "ns", "team-a", "--no-headers"); !strings.HasPrefix(out, "team-a") || !strings.Contains(out, "Active") {
		t.Errorf("kubectl get ns team-a = %q, want team-a Active", out)
	}
	if out := w.Kubectl("get", "ns", "team-a", "-o", "jsonpath={.spec.finalizers} {.metadata.labels}"); !strings.Contains(out, `["kubernetes"]`) || !strings.Contains(out, `"kubernetes.io/metadata.name":"team-a"`) {
		t.Errorf("namespace finalizers and labels = %q", out)
	}

	w.Kubectl("create", "configmap", "settings", "-n", "team-a", "--from-literal=color=blue", "--from-literal=size=xl")
	if out := w.Kubectl("get", "cm", "-n", "team-a", "settings"); !strings.Contains(out, "DATA") || !strings.Contains(out, "settings   2") {
		t.Errorf("kubectl get cm = %q, want a DATA column with 2", out)
	}
	if out := w.Kubectl("get", "cm", "settings", "-n", "team-a", "-o", "jsonpath={.data.color}"); out != "blue" {
		t.Errorf("configmap data.color = %q, want blue", out)
	}

	w.Kubectl("create", "secret", "generic", "db", "-n", "team-a", "--from-literal=password=s3cret")
	if out := w.Kubectl("get", "secret", "db", "-n", "team-a", "-o", "jsonpath={.type} {.data.password}"); out != "Opaque czNjcmV0" {
		t.Errorf("secret type and data = %q, want Opaque czNjcmV0", out)
	}
	if out := w.Kubectl("get", "secrets", "-n", "team-a"); !strings.Contains(out, "TYPE") || !strings.Contains(out, "Opaque") {
		t.Errorf("kubectl get secrets = %q, want a TYPE column", out)
	}
	// stringData is merged into data on write and never stored.
	w.KubectlStdin(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"merged","namespace":"team-a"},"data":{"a":"YQ=="},"stringData":{"b":"bee"}}`, "apply", "-f", "-")
	if out := w.Kubectl("get", "secret", "merged", "-n", "team-a", "-o", "jsonpath={.data.a} {.data.b} {.stringData}"); out != "YQ== YmVl " {
		t.Errorf("secret after stringData = %q, want %q", out, "YQ== YmVl ")
	}
	// kube-apiserver's validation: a TLS secret needs its keys.
	if msg := w.KubectlStdinFail(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls","namespace":"team-a"},"type":"kubernetes.io/tls","data":{"tls.crt":"eA=="}}`, "create", "-f", "-"); !strings.Contains(msg, `Secret "tls" is invalid: data[tls.key]: Required value`) {
		t.Errorf("TLS secret without tls.key: %q", msg)
	}

	w.Kubectl("create", "serviceaccount", "robot", "-n", "team-a")
	uid := w.Kubectl("get", "sa", "robot", "-n", "team-a", "-o", "jsonpath={.metadata.uid}")
	token := strings.TrimSpace(w.Kubectl("create", "token", "robot", "-n", "team-a", "--duration=15m"))
	robot := w.tokenUser("robot", token)
	out, errOut, ok := robot.Kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.uid}")
	if !ok || out != "system:serviceaccount:team-a:robot "+uid {
		t.Fatalf("kubectl auth whoami with the token = %q (%s), want the service account and its uid %s", out, errOut, uid)
	}
	if msg := w.KubectlFail("create", "token", "robot", "-n", "team-a", "--duration=5m"); !strings.Contains(msg, "may not specify a duration less than 10 minutes") {
		t.Errorf("kubectl create token --duration=5m: %q", msg)
	}
	// client-go's TokenRequest in protobuf: the answer carries what
	// kube-apiserver's does, the service account's uid, a creation time
	// and the writer's managedFields on the token subresource.
	cfg := w.RESTConfig()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	secs := int64(900)
	tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts("team-a").CreateToken(t.Context(), "robot",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{FieldManager: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if string(tr.UID) != uid || tr.CreationTimestamp.IsZero() || tr.Status.Token == "" || len(tr.ManagedFields) != 1 ||
		tr.ManagedFields[0].Manager != "e2e" || tr.ManagedFields[0].Subresource != "token" || tr.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Errorf("TokenRequest answer %+v, want uid %s, a creationTimestamp and e2e's Update on token", tr.ObjectMeta, uid)
	}

	// Deleting the service account invalidates its tokens (once the
	// server's 10 s token cache has forgotten the token).
	w.Kubectl("delete", "sa", "robot", "-n", "team-a")
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, errOut, ok := robot.Kubectl("auth", "whoami")
		if !ok && strings.Contains(errOut, "Unauthorized") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token of a deleted service account still authenticates (ok=%v, %s)", ok, errOut)
		}
		time.Sleep(time.Second)
	}

	// Discovery: /api lists v1, kubectl finds the short names.
	if out := w.Kubectl("get", "--raw", "/api"); !strings.Contains(out, `"kind":"APIVersions","versions":["v1"]`) {
		t.Errorf("GET /api = %s", out)
	}
	res := w.Kubectl("api-resources", "--api-group=", "--no-headers")
	for _, want := range []string{"configmaps   cm", "namespaces   ns", "serviceaccounts   sa", "secrets"} {
		if !strings.Contains(strings.Join(strings.Fields(res), "   "), strings.Join(strings.Fields(want), "   ")) {
			t.Errorf("kubectl api-resources lacks %q:\n%s", want, res)
		}
	}

	// The default roles cover the core group as kube's: view reads
	// configmaps but not secrets, edit writes secrets and mints tokens.
	w.Kubectl("create", "rolebinding", "bob-view", "-n", "team-a", "--clusterrole=view", "--user=bob")
	w.Kubectl("create", "rolebinding", "carol-edit", "-n", "team-a", "--clusterrole=edit", "--user=carol")
	bob, carol := w.NewUser("bob"), w.NewUser("carol")
	for _, tc := range []struct {
		u    *User
		args []string
		want string
	}{
		{bob, []string{"get", "configmaps"}, "yes"},
		{bob, []string{"get", "secrets"}, "no"},
		{bob, []string{"create", "configmaps"}, "no"},
		{carol, []string{"create", "secrets"}, "yes"},
		{carol, []string{"create", "serviceaccounts/token"}, "yes"},
	} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, _, _ := tc.u.Kubectl(append([]string{"auth", "can-i", "-n", "team-a"}, tc.args...)...)
			if strings.TrimSpace(out) == tc.want {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: kubectl auth can-i %v = %q, want %s", tc.u.Name, tc.args, out, tc.want)
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	// A DELETE marks the namespace Terminating: the "kubernetes" finalizer
	// keeps it until the namespace controller has deleted its content and
	// removed the finalizer (e2e/nslifecycle_test.go looks closer).
	w.Kubectl("delete", "ns", "team-a", "--wait=false")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, _, err := w.kubectlRaw(ctx, "get", "ns", "team-a"); err != nil {
			return // gone
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Error("the namespace is still there 30s after its delete")
}

// TestCoreEventsAndLeases: events written through core/v1 and
// events.k8s.io/v1 are one resource (kubectl get events shows both with
// kube's columns), leases are served by coordination.k8s.io/v1, and
// --event-ttl expires events.
func TestCoreEventsAndLeases(t *testing.T) {
	w := StartWardle(t, "--core-api", "--event-ttl=3s")
	w.Kubectl("create", "ns", "team-a")
	dyn := w.Dynamic()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	coreEvents := schema.GroupVersionResource{Version: "v1", Resource: "events"}
	now := time.Now().UTC().Format(time.RFC3339)
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "started", "namespace": "team-a"},
		"involvedObject": map[string]any{"kind": "Flunder", "namespace": "team-a", "name": "f1"},
		"reason":         "Started", "message": "the flunder started", "type": "Normal", "count": int64(1),
		"firstTimestamp": now, "lastTimestamp": now, "source": map[string]any{"component": "flunder-controller"},
	}}
	if _, err := dyn.Resource(coreEvents).Namespace("team-a").Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newEvents := schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	ev := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"name": "reconciled", "namespace": "team-a"},
		"eventTime": time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"), "reportingController": "example.com/flunders",
		"reportingInstance": "ctl-1", "action": "Reconcile", "reason": "Reconciled", "note": "all good", "type": "Warning",
		"regarding": map[string]any{"kind": "Flunder", "namespace": "team-a", "name": "f1"},
	}}
	if _, err := dyn.Resource(newEvents).Namespace("team-a").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As kube-apiserver: a core event's name is checked only as a path
	// segment; events.k8s.io/v1 validates strictly (an RFC 1123 name, no
	// deprecated fields) and keeps an event's fields immutable.
	loose := old.DeepCopy()
	loose.SetName("Bad_Name")
	if _, err := dyn.Resource(coreEvents).Namespace("team-a").Create(ctx, loose, metav1.CreateOptions{}); err != nil {
		t.Errorf("core event named Bad_Name: %v", err)
	}
	strict := ev.DeepCopy()
	strict.SetName("Bad_Name")
	strict.Object["deprecatedCount"] = int64(3)
	_, err := dyn.Resource(newEvents).Namespace("team-a").Create(ctx, strict, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `metadata.name: Invalid value: "Bad_Name"`) || !strings.Contains(err.Error(), "count: Invalid value: \"\": needs to be unset") {
		t.Errorf("events.k8s.io/v1 event named Bad_Name with deprecatedCount: %v, want 422 naming both", err)
	}
	changed, err := dyn.Resource(newEvents).Namespace("team-a").Get(ctx, "reconciled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed.Object["note"] = "rewritten"
	if _, err := dyn.Resource(newEvents).Namespace("team-a").Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "message: Invalid value: \"rewritten\": field is immutable") {
		t.Errorf("events.k8s.io/v1 update of note: %v, want 422 field is immutable", err)
	}
	out := w.Kubectl("get", "events", "-n", "team-a")
	for _, want := range []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE", "Started", "flunder/f1", "the flunder started", "Reconciled", "all good"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get events lacks %q:\n%s", want, out)
		}
	}
	if got := w.Kubectl("get", "events.v1.events.k8s.io", "started", "-n", "team-a", "-o", "jsonpath={.note} {.regarding.name}"); got != "the flunder started f1" {
		t.Errorf("the core event through events.k8s.io/v1: %q", got)
	}

	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	lease := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "leader", "namespace": "team-a"},
		"spec": map[string]any{"holderIdentity": "pod-a", "leaseDurationSeconds": int64(15)},
	}}
	if _, err := dyn.Resource(leases).Namespace("team-a").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := w.Kubectl("get", "leases", "-n", "team-a"); !strings.Contains(out, "HOLDER") || !strings.Contains(out, "pod-a") {
		t.Errorf("kubectl get leases:\n%s", out)
	}

	// --event-ttl=3s: both events are gone within a few seconds.
	for ctx.Err() == nil {
		if out := w.Kubectl("get", "events", "-n", "team-a", "-o", "name"); strings.TrimSpace(out) == "" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Error("events outlived --event-ttl")
}

// TestEncryptionAtRestKubectl: a secret created with kubectl on a wardle
// with --encryption-provider-config is ciphertext in its embedded etcd
// (read straight from etcd's data once wardle stopped) and plaintext to
// kubectl; after a key rotation and a restart, it still reads.
func TestEncryptionAtRestKubectl(t *testing.T) {
	key := func(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	cfg := filepath.Join(t.TempDir(), "encryption.yaml")
	write := func(providers string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n"+providers), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	aescbc := "  - aescbc:\n      keys:\n      - name: key1\n        secret: " + key(1) + "\n"
	write(aescbc + "  - identity: {}\n")
	w := StartWardle(t, "--core-api", "--encryption-provider-config="+cfg)
	w.Kubectl("create", "secret", "generic", "db", "--from-literal=password=hunter2hunter2")
	w.Kubectl("create", "configmap", "plain", "--from-literal=color=blue")
	if out := w.Kubectl("get", "secret", "db", "-o", "jsonpath={.data.password}"); out != base64.StdEncoding.EncodeToString([]byte("hunter2hunter2")) {
		t.Fatalf("secret read back %q", out)
	}
	w.Stop()

	raw := func(key string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		e, err := embedded.Start(ctx, embedded.Config{DataDir: filepath.Join(w.DataDir, "etcd")})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		resp, err := e.Client().Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("etcd get %s: %v %v", key, err, resp)
		}
		return resp.Kvs[0].Value
	}
	v := raw("/registry/secrets/default/db")
	if !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) || bytes.Contains(v, []byte("hunter2")) || bytes.Contains(v, []byte(base64.StdEncoding.EncodeToString([]byte("hunter2hunter2")))) {
		t.Fatalf("etcd holds %q", v)
	}
	if v := raw("/registry/configmaps/default/plain"); !bytes.Contains(v, []byte(`"color":"blue"`)) {
		t.Errorf("a configmap, which the configuration does not name, is stored as %q", v)
	}

	// Rotation: secretbox first, the old key kept to read.
	write("  - secretbox:\n      keys:\n      - name: key2\n        secret: " + key(2) + "\n" + aescbc)
	w.Start()
	if out := w.Kubectl("get", "secret", "db", "-o", "jsonpath={.data.password}"); out != base64.StdEncoding.EncodeToString([]byte("hunter2hunter2")) {
		t.Fatalf("secret after rotation %q", out)
	}
	w.Kubectl("create", "secret", "generic", "db2", "--from-literal=password=x")
	w.Stop()
	if v := raw("/registry/secrets/default/db2"); !bytes.HasPrefix(v, []byte("k8s:enc:secretbox:v1:key2:")) {
		t.Errorf("a new secret after rotation is stored as %q", v)
	}
}
