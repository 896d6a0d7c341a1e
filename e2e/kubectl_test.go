package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

const flunderYAML = `apiVersion: wardle.example.com/v1beta1
kind: Flunder
metadata:
  name: %s
  labels:
    app: e2e
spec:
  flunderReference: %s
`

// TestKubectl drives the wardle server with kubectl the way a user does.
func TestKubectl(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")

	t.Run("api-resources and api-versions", func(t *testing.T) {
		out := w.Kubectl("api-resources", "--api-group=wardle.example.com")
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^flunders\s+wardle\.example\.com/v1beta1\s+true\s+Flunder$`),
			regexp.MustCompile(`(?m)^fischers\s+wardle\.example\.com/v1alpha1\s+false\s+Fischer$`),
		} {
			if !want.MatchString(out) {
				t.Errorf("api-resources lacks %v:\n%s", want, out)
			}
		}
		out = w.Kubectl("api-versions")
		for _, gv := range []string{"wardle.example.com/v1alpha1", "wardle.example.com/v1beta1"} {
			if !strings.Contains(out, gv+"\n") {
				t.Errorf("api-versions lacks %s:\n%s", gv, out)
			}
		}
	})

	t.Run("create, get as table and yaml", func(t *testing.T) {
		out := w.KubectlStdin(fmt.Sprintf(flunderYAML, "alpha", "beta"), "create", "-f", "-")
		if strings.TrimSpace(out) != "flunder.wardle.example.com/alpha created" {
			t.Errorf("create said %q", out)
		}
		out = w.Kubectl("get", "flunders")
		if !regexp.MustCompile(`^NAME\s+REFERENCE TYPE\s+REFERENCE\s+AGE\nalpha\s+Flunder\s+beta\s+\d+s\n$`).MatchString(out) {
			t.Errorf("get flunders:\n%s", out)
		}
		out = w.Kubectl("get", "flunder", "alpha", "-o", "yaml")
		for _, want := range []string{"apiVersion: wardle.example.com/v1beta1", "kind: Flunder", "name: alpha", "namespace: default",
			"uid: ", "resourceVersion: ", "creationTimestamp: ", "generation: 1", "flunderReference: beta", "referenceType: Flunder"} {
			if !strings.Contains(out, want) {
				t.Errorf("get -o yaml lacks %q:\n%s", want, out)
			}
		}
		// The same object in the older version, converted.
		out = w.Kubectl("get", "flunders.v1alpha1.wardle.example.com", "alpha", "-o", "jsonpath={.apiVersion} {.spec.reference} {.spec.referenceType}")
		if out != "wardle.example.com/v1alpha1 beta Flunder" {
			t.Errorf("v1alpha1 view = %q", out)
		}
	})

	t.Run("apply twice", func(t *testing.T) {
		manifest := fmt.Sprintf(flunderYAML, "applied", "one")
		if out := w.KubectlStdin(manifest, "apply", "-f", "-"); strings.TrimSpace(out) != "flunder.wardle.example.com/applied created" {
			t.Errorf("first apply said %q", out)
		}
		if out := w.KubectlStdin(manifest, "apply", "-f", "-"); strings.TrimSpace(out) != "flunder.wardle.example.com/applied unchanged" {
			t.Errorf("second apply said %q", out)
		}
		changed := strings.Replace(manifest, "flunderReference: one", "flunderReference: two", 1)
		if out := w.KubectlStdin(changed, "apply", "-f", "-"); strings.TrimSpace(out) != "flunder.wardle.example.com/applied configured" {
			t.Errorf("changed apply said %q", out)
		}
		if out := w.Kubectl("get", "flunder", "applied", "-o", "jsonpath={.spec.flunderReference} {.metadata.generation}"); out != "two 2" {
			t.Errorf("after apply: %q, want \"two 2\"", out)
		}
	})

	t.Run("patch and label", func(t *testing.T) {
		w.Kubectl("patch", "flunder", "alpha", "--type=merge", "-p", `{"spec":{"flunderReference":"gamma"}}`)
		w.Kubectl("label", "flunder", "alpha", "tier=gold")
		out := w.Kubectl("get", "flunder", "alpha", "-o", "jsonpath={.spec.flunderReference} {.metadata.labels.tier}")
		if out != "gamma gold" {
			t.Errorf("after patch and label: %q", out)
		}
		out = w.Kubectl("get", "flunders", "-l", "tier=gold", "-o", "name")
		if strings.TrimSpace(out) != "flunder.wardle.example.com/alpha" {
			t.Errorf("label selector: %q", out)
		}
		// kubectl patch without --type sends a strategic merge patch.
		w.Kubectl("patch", "flunder", "alpha", "-p", `{"metadata":{"labels":{"tier":null,"zone":"b"}}}`)
		if out := w.Kubectl("get", "flunder", "alpha", "-o", "jsonpath={.metadata.labels}"); out != `{"app":"e2e","zone":"b"}` {
			t.Errorf("after a strategic merge patch: %s", out)
		}
		w.Kubectl("label", "flunder", "alpha", "tier=gold", "zone-")
		errOut := w.KubectlFail("patch", "flunder", "alpha", "--type=merge", "-p", `{"spec":{"referenceType":"Nope"}}`)
		if !strings.Contains(errOut, `spec.referenceType: Invalid value: "Nope": must be Flunder or Fischer`) {
			t.Errorf("invalid patch error: %s", errOut)
		}
	})

	t.Run("chunked list", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			w.KubectlStdin(fmt.Sprintf(flunderYAML, fmt.Sprintf("chunk-%d", i), "x"), "create", "-n", "chunks", "-f", "-")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, errOut, err := w.kubectlRaw(ctx, "get", "flunders", "-n", "chunks", "--chunk-size=2", "-o", "name", "-v=6")
		if err != nil {
			t.Fatalf("chunked get: %v\n%s", err, errOut)
		}
		for i := 0; i < 5; i++ {
			if !strings.Contains(out, fmt.Sprintf("flunder.wardle.example.com/chunk-%d\n", i)) {
				t.Errorf("chunked get lacks chunk-%d:\n%s", i, out)
			}
		}
		if n := strings.Count(errOut, "limit=2"); n != 3 {
			t.Errorf("want 3 requests with limit=2 (5 objects in pages of 2), saw %d:\n%s", n, errOut)
		}
	})

	t.Run("watch", func(t *testing.T) {
		watch := watchFlunders(t, w.Kubeconfig(), w.DataDir, "watched")
		w.KubectlStdin(fmt.Sprintf(flunderYAML, "w1", "a"), "create", "-n", "watched", "-f", "-")
		w.Kubectl("patch", "flunder", "w1", "-n", "watched", "--type=merge", "-p", `{"spec":{"flunderReference":"b"}}`)
		w.Kubectl("delete", "flunder", "w1", "-n", "watched")
		watch.expect("ADDED w1 a", "MODIFIED w1 b", "DELETED w1 b")
	})

	t.Run("delete", func(t *testing.T) {
		out := w.Kubectl("delete", "flunder", "applied")
		if strings.TrimSpace(out) != `flunder.wardle.example.com "applied" deleted` {
			t.Errorf("delete said %q", out)
		}
		errOut := w.KubectlFail("get", "flunder", "applied")
		if !strings.Contains(errOut, `Error from server (NotFound): flunders.wardle.example.com "applied" not found`) {
			t.Errorf("get after delete: %s", errOut)
		}
	})

	t.Run("explain", func(t *testing.T) {
		out := w.Kubectl("explain", "flunders")
		for _, want := range []string{"GROUP:      wardle.example.com", "KIND:       Flunder", "VERSION:    v1beta1", "metadata", "spec"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain flunders lacks %q:\n%s", want, out)
			}
		}
		out = w.Kubectl("explain", "flunders.spec")
		for _, want := range []string{"flunderReference", "fischerReference", "referenceType"} {
			if !strings.Contains(out, want) {
				t.Errorf("explain flunders.spec lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("admission refuses a banned name", func(t *testing.T) {
		w.KubectlStdin("apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata: {name: strict}\ndisallowedFlunders: [forbidden-name]\n", "create", "-f", "-")
		cmd := exec.Command("kubectl", "create", "-f", "-")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+w.Kubeconfig(), "HOME="+w.DataDir)
		cmd.Stdin = strings.NewReader(fmt.Sprintf(flunderYAML, "forbidden-name", "x"))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `Error from server (Forbidden): error when creating "STDIN": flunders.wardle.example.com "forbidden-name" is forbidden: this name may not be used, please change the resource name`) {
			t.Errorf("banned create: %v\n%s", err, out)
		}
	})
}
