package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/apikit-dev/apikit/e2e/internal/gatewayapi"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestGatewayAPIWithKubectl installs the Gateway API v1.6.3 standard
// channel's CRDs into the chain's extensions server with
// `kubectl apply --server-side` (as the project's install instructions
// do), waits for every one to be Established, then applies every Gateway
// API resource of the release's standard examples: kube-apiserver accepts
// them all, their CEL rules included (e2e/celdiff and e2e/structuraldiff
// hold the two engines to kube's own code on the same files), and so must
// apikit. A resource breaking one of the CRDs' CEL rules is refused with
// the rule's message. Skipped when the module proxy cannot be reached.
func TestGatewayAPIWithKubectl(t *testing.T) {
	dir := gatewayapi.Dir(t)

	w := startChain(t)
	crds, err := filepath.Glob(filepath.Join(dir, "config/crd/standard/gateway.networking.k8s.io_*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	installed := 0
	for _, f := range crds {
		for _, doc := range gatewayapi.Docs(t, f) {
			var head struct{ Kind string }
			_ = json.Unmarshal(doc, &head)
			if head.Kind != "CustomResourceDefinition" {
				continue // the release's ValidatingAdmissionPolicy rides along in the directory
			}
			w.KubectlStdin(string(doc), "apply", "--server-side", "-f", "-")
			installed++
		}
	}
	if installed < 8 {
		t.Fatalf("installed %d CRDs, want the standard channel's", installed)
	}
	w.Kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=120s")

	// The examples' Gateway API resources, after the namespaces they are
	// in (NamespaceLifecycle admits objects only into namespaces that
	// exist); Services and Deployments are not served by the chain.
	type example struct {
		path string
		doc  []byte
	}
	var examples []example
	namespaces := map[string]bool{}
	err = filepath.WalkDir(filepath.Join(dir, "examples/standard"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		for _, doc := range gatewayapi.Docs(t, path) {
			var head struct {
				APIVersion string
				Metadata   struct{ Namespace string }
			}
			_ = json.Unmarshal(doc, &head)
			if strings.HasPrefix(head.APIVersion, "gateway.networking.k8s.io/") {
				examples = append(examples, example{strings.TrimPrefix(path, dir), doc})
				if head.Metadata.Namespace != "" {
					namespaces[head.Metadata.Namespace] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for ns := range namespaces {
		w.KubectlStdin(fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns), "apply", "-f", "-")
	}
	applied := 0
	for _, ex := range examples {
		y, err := yaml.JSONToYAML(ex.doc)
		if err != nil {
			t.Fatal(err)
		}
		if msg, ok := kubectlStdin(w, string(y), "apply", "--server-side", "-f", "-"); !ok {
			t.Errorf("%s: refused:\n%s\n%s", ex.path, msg, y)
		}
		applied++
	}
	if applied < 40 {
		t.Errorf("applied %d example resources, want the release's standard examples", applied)
	}

	// A CEL rule of the HTTPRoute CRD: a path match of type Exact must
	// start with "/".
	bad := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bad-path, namespace: default}
spec:
  rules:
  - matches:
    - path: {type: Exact, value: "no-slash"}
`
	if msg, ok := kubectlStdin(w, bad, "apply", "--server-side", "-f", "-"); ok || !strings.Contains(msg, "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']") {
		t.Errorf("an HTTPRoute breaking its CRD's CEL rule: accepted %v:\n%s", ok, msg)
	}
}

// kubectlStdin runs kubectl with input on stdin and reports its output and
// whether it succeeded.
func kubectlStdin(w *Wardle, input string, args ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := w.kubectlCmd(ctx, args...)
	cmd.Stdin = strings.NewReader(input)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err == nil
}
