package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestClientSideApplyStrategic: the OpenAPI documents publish strategic
// merge patch with the schemas' patch strategies, so kubectl's client-side
// apply computes a strategic merge patch, as against kube-apiserver: a
// finalizer another client added survives an apply that does not know it
// (a JSON merge patch would replace the whole list).
func TestClientSideApplyStrategic(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	manifest := func(finalizers ...string) string {
		return "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: csa\n  finalizers: [" +
			strings.Join(finalizers, ", ") + "]\nspec:\n  flunderReference: one\n"
	}
	w.KubectlStdin(manifest("example.com/a"), "apply", "-f", "-")
	w.Kubectl("patch", "flunder", "csa", "--type=json", "-p", `[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/b"}]`)
	w.KubectlStdin(manifest("example.com/a", "example.com/c"), "apply", "-f", "-")
	if got := w.Kubectl("get", "flunder", "csa", "-o", "jsonpath={.metadata.finalizers}"); got != `["example.com/a","example.com/b","example.com/c"]` {
		t.Errorf("finalizers after apply = %s, want the other client's kept (a strategic merge patch)", got)
	}
	w.Kubectl("patch", "flunder", "csa", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
}

// TestServerSideApply drives server-side apply with kubectl as a user does,
// and with client-go's dynamic client.
func TestServerSideApply(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	manifest := func(name, ref string) string {
		return "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: " + name +
			"\n  labels:\n    app: ssa\nspec:\n  flunderReference: " + ref + "\n"
	}

	t.Run("create, change, conflict, force", func(t *testing.T) {
		if out := w.KubectlStdin(manifest("ssa", "one"), "apply", "--server-side", "-f", "-"); strings.TrimSpace(out) != "flunder.wardle.example.com/ssa serverside-applied" {
			t.Errorf("apply --server-side said %q", out)
		}
		w.KubectlStdin(manifest("ssa", "two"), "apply", "--server-side", "-f", "-")
		if got := w.Kubectl("get", "flunder", "ssa", "-o", "jsonpath={.spec.flunderReference}"); got != "two" {
			t.Errorf("after the second apply: %q", got)
		}
		errOut := w.KubectlStdinFail(manifest("ssa", "three"), "apply", "--server-side", "--field-manager=other", "-f", "-")
		if !strings.Contains(errOut, `Apply failed with 1 conflict: conflict with "kubectl": .spec.flunderReference`) {
			t.Errorf("conflicting apply said:\n%s", errOut)
		}
		w.KubectlStdin(manifest("ssa", "three"), "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-")
		out := w.Kubectl("get", "flunder", "ssa", "--show-managed-fields", "-o", "yaml")
		for _, want := range []string{"flunderReference: three", "manager: kubectl", "manager: other", "operation: Apply", "fieldsType: FieldsV1", "f:flunderReference: {}"} {
			if !strings.Contains(out, want) {
				t.Errorf("get --show-managed-fields lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("diff and dry run", func(t *testing.T) {
		out, _, err := w.kubectlStdinRaw(manifest("ssa", "four"), "diff", "--server-side", "--force-conflicts", "-f", "-")
		if err == nil || !strings.Contains(out, "-  flunderReference: three") || !strings.Contains(out, "+  flunderReference: four") {
			t.Errorf("diff --server-side: err %v\n%s", err, out)
		}
		out = w.KubectlStdin(manifest("ssa", "five"), "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-")
		if !strings.Contains(out, "serverside-applied (server dry run)") {
			t.Errorf("dry run said %q", out)
		}
		if got := w.Kubectl("get", "flunder", "ssa", "-o", "jsonpath={.spec.flunderReference}"); got != "three" {
			t.Errorf("a dry run changed the object: %q", got)
		}
	})

	t.Run("client-side then server-side", func(t *testing.T) {
		w.KubectlStdin(manifest("csa-then-ssa", "one"), "apply", "-f", "-")
		// kubectl takes over what client-side apply set: no conflict
		// with kubectl-client-side-apply.
		w.KubectlStdin(manifest("csa-then-ssa", "two"), "apply", "--server-side", "-f", "-")
		out := w.Kubectl("get", "flunder", "csa-then-ssa", "--show-managed-fields", "-o", "yaml")
		for _, want := range []string{"flunderReference: two", "manager: kubectl\n", "kubectl.kubernetes.io/last-applied-configuration"} {
			if !strings.Contains(out, want) {
				t.Errorf("after server-side apply lacks %q:\n%s", want, out)
			}
		}
		if got := w.Kubectl("get", "flunder", "csa-then-ssa", "-o", `jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}`); !strings.Contains(got, `"flunderReference":"two"`) {
			t.Errorf("the last-applied annotation was not kept up to date: %s", got)
		}
	})

	t.Run("client-go dynamic Apply", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
			"metadata": map[string]any{"name": "dyn"},
			"spec":     map[string]any{"flunderReference": "x"},
		}}
		res := w.Dynamic().Resource(flundersGVR).Namespace("default")
		got, err := res.Apply(ctx, "dyn", obj, metav1.ApplyOptions{FieldManager: "dynamic"})
		if err != nil {
			t.Fatal(err)
		}
		if mf := got.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "dynamic" || mf[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("managedFields = %+v", mf)
		}
		unstructured.SetNestedField(obj.Object, "y", "spec", "flunderReference")
		if _, err := res.Apply(ctx, "dyn", obj, metav1.ApplyOptions{FieldManager: "rival"}); !apierrors.IsConflict(err) {
			t.Errorf("a rival's apply: %v, want a conflict", err)
		}
		got, err = res.Apply(ctx, "dyn", obj, metav1.ApplyOptions{FieldManager: "rival", Force: true})
		if err != nil || got.Object["spec"].(map[string]any)["flunderReference"] != "y" {
			t.Errorf("forced apply: %v %v", err, got)
		}
	})
}

// kubectlStdinRaw runs kubectl with input on stdin and returns its output
// and error, whatever they are.
func (w *Wardle) kubectlStdinRaw(input string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.Kubeconfig(), "HOME="+w.DataDir)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// KubectlStdinFail runs kubectl with input, expecting it to fail, and
// returns its stderr.
func (w *Wardle) KubectlStdinFail(input string, args ...string) string {
	w.t.Helper()
	out, errOut, err := w.kubectlStdinRaw(input, args...)
	if err == nil {
		w.t.Fatalf("kubectl %s succeeded, want failure:\n%s", strings.Join(args, " "), out)
	}
	return errOut
}
