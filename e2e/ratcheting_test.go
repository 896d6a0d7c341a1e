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

const doodadCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: doodads.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: doodads, singular: doodad, kind: Doodad}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        %s
        properties:
          spec:
            type: object
            %s
            properties:
              size: {type: integer}
              note: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                maxItems: 8
                items:
                  type: string
                  maxLength: 16
                  %s
`

// TestCRDRuleRatchetingWithKubectl tightens a CRD's CEL rules after a
// custom resource that breaks them was stored. As kube-apiserver 1.37
// (CRDValidationRatcheting): a rule failing on a value the update left
// unchanged is sent as a warning (kubectl prints it) and the write
// succeeds; the items of an unchanged set ratchet with it, and fail once
// the set changes; a rule at the root reads metadata.name and never
// ratchets.
func TestCRDRuleRatchetingWithKubectl(t *testing.T) {
	w := startChain(t)
	w.KubectlStdin(fmt.Sprintf(doodadCRDYAML, "", "", ""), "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/doodads.example.com", "--timeout=60s")
	w.KubectlStdin("apiVersion: example.com/v1\nkind: Doodad\nmetadata: {name: d1, namespace: default}\nspec: {size: 20, tags: [Bad]}\n", "create", "-f", "-")

	w.KubectlStdin(fmt.Sprintf(doodadCRDYAML,
		`x-kubernetes-validations: [{rule: "self.metadata.name.startsWith('d')", message: "names start with d"}]`,
		`x-kubernetes-validations: [{rule: "self.size <= 10", message: "size at most 10"}]`,
		`x-kubernetes-validations: [{rule: "self == self.lowerAscii()", message: "tags are lower case"}]`), "apply", "-f", "-")
	poll(t, "the tightened rules refuse a create", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := w.kubectlCmd(ctx, "create", "-f", "-", "--dry-run=server")
		cmd.Stdin = strings.NewReader("apiVersion: example.com/v1\nkind: Doodad\nmetadata: {name: e1, namespace: default}\nspec: {size: 1, tags: [Bad]}\n")
		out, err := cmd.CombinedOutput()
		return err != nil && strings.Contains(string(out), "tags are lower case"), string(out)
	})
	// The root rule reads metadata.name.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := w.kubectlCmd(ctx, "create", "-f", "-", "--dry-run=server")
	cmd.Stdin = strings.NewReader("apiVersion: example.com/v1\nkind: Doodad\nmetadata: {name: e1, namespace: default}\nspec: {size: 1}\n")
	out, err := cmd.CombinedOutput()
	if want := `<nil>: Invalid value: names start with d`; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("a create named e1: %v\n%s\nwant %s", err, out, want)
	}

	// A label changes no rule's value: the failures are warnings.
	stdout, stderr, err := w.kubectlRaw(ctx, "label", "doodad", "d1", "tier=gold")
	if err != nil {
		t.Fatalf("kubectl label: %v\n%s%s", err, stdout, stderr)
	}
	for _, want := range []string{
		`Warning: spec: Invalid value: size at most 10`,
		`Warning: spec.tags[0]: Invalid value: "Bad": tags are lower case`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("kubectl label's warnings:\n%s\nwant %s", stderr, want)
		}
	}
	// A change of spec makes the rule on spec count, while the set's
	// items, unchanged, still warn.
	warnings, errs := splitWarnings(w.KubectlFail("patch", "doodad", "d1", "--type=merge", "-p", `{"spec":{"note":"x"}}`))
	if want := `The Doodad "d1" is invalid: spec: Invalid value: size at most 10`; !strings.Contains(errs, want) || strings.Contains(errs, "tags") ||
		!strings.Contains(warnings, `Warning: spec.tags[0]: Invalid value: "Bad": tags are lower case`) {
		t.Errorf("a change of spec.note:\n%s%s\nwant the error %s and a warning for spec.tags[0]", warnings, errs, want)
	}
	// A changed set makes its items' failures count.
	warnings, errs = splitWarnings(w.KubectlFail("patch", "doodad", "d1", "--type=merge", "-p", `{"spec":{"size":5,"tags":["Bad","ok"]}}`))
	if want := `The Doodad "d1" is invalid: spec.tags[0]: Invalid value: "Bad": tags are lower case`; !strings.Contains(errs, want) || warnings != "" {
		t.Errorf("a new tag:\n%s%s\nwant %s alone", warnings, errs, want)
	}
	w.Kubectl("patch", "doodad", "d1", "--type=merge", "-p", `{"spec":{"size":5,"tags":["good"]}}`)
}

// splitWarnings splits kubectl's stderr into its warning lines and the rest.
func splitWarnings(stderr string) (warnings, rest string) {
	for _, line := range strings.SplitAfter(stderr, "\n") {
		if strings.HasPrefix(line, "Warning: ") {
			warnings += line
		} else {
			rest += line
		}
	}
	return warnings, rest
}
