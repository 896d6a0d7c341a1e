package e2e

import (
	"strings"
	"testing"
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
