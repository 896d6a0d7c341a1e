package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

const gadgetCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              name: {type: string%s}
              size: {type: integer%s}
`

// gadgetCRD is the gadgets' CRD with more constraints for spec.name and
// spec.size (YAML flow-map entries, each starting with a comma).
func gadgetCRD(name, size string) string {
	return fmt.Sprintf(gadgetCRDYAML, name, size)
}

// TestCRDValidationRatchetingWithKubectl tightens a CRD's schema after a
// custom resource that breaks it was stored, as kube-apiserver 1.37
// allows (CRDValidationRatcheting): kubectl label and a patch of another
// field still succeed, while a change of the invalid field, or a new
// invalid value elsewhere, is refused with kube's message.
func TestCRDValidationRatchetingWithKubectl(t *testing.T) {
	w := startChain(t)
	w.KubectlStdin(gadgetCRD("", ""), "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=60s")
	w.KubectlStdin("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: default}\nspec: {name: Bad_Name, size: 20}\n", "create", "-f", "-")

	w.KubectlStdin(gadgetCRD(", pattern: '^[a-z]+$'", ", maximum: 10"), "apply", "-f", "-")
	// The new schema serves once the CRD's change reaches the handler.
	poll(t, "the tightened schema refuses a create", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := w.kubectlCmd(ctx, "create", "-f", "-", "--dry-run=server")
		cmd.Stdin = strings.NewReader("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g2, namespace: default}\nspec: {name: Bad_Name}\n")
		out, err := cmd.CombinedOutput()
		return err != nil && strings.Contains(string(out), "spec.name in body should match"), string(out)
	})

	// Unchanged invalid values ratchet: labels and other fields change.
	w.Kubectl("label", "gadget", "g1", "tier=gold")
	w.Kubectl("patch", "gadget", "g1", "--type=merge", "-p", `{"spec":{"size":5}}`)
	if got := w.Kubectl("get", "gadget", "g1", "-o", "jsonpath={.metadata.labels.tier}|{.spec.name}|{.spec.size}"); got != "gold|Bad_Name|5" {
		t.Errorf("labels and spec after the writes = %q, want gold|Bad_Name|5", got)
	}

	// A change of the invalid field is checked.
	msg := w.KubectlFail("patch", "gadget", "g1", "--type=merge", "-p", `{"spec":{"name":"Other_Bad"}}`)
	if want := `spec.name: Invalid value: "Other_Bad": spec.name in body should match '^[a-z]+$'`; !strings.Contains(msg, want) {
		t.Errorf("changing the invalid name: %s\nwant %s", msg, want)
	}
	// So is a new invalid value beside the unchanged one, alone.
	msg = w.KubectlFail("patch", "gadget", "g1", "--type=merge", "-p", `{"spec":{"size":20}}`)
	if want := `spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10`; !strings.Contains(msg, want) || strings.Contains(msg, "spec.name") {
		t.Errorf("an invalid size beside the unchanged name: %s\nwant %s alone", msg, want)
	}
	// A fix of the invalid field is, of course, accepted.
	w.Kubectl("patch", "gadget", "g1", "--type=merge", "-p", `{"spec":{"name":"good"}}`)
}
