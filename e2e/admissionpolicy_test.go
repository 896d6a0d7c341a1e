package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const namesPolicyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-names
spec:
  matchConstraints:
    resourceRules:
    - operations: ["CREATE", "UPDATE"]
      apiGroups: ["wardle.example.com"]
      apiVersions: ["*"]
      resources: ["flunders"]
  validations:
  - expression: "object.metadata.name.startsWith('ok-')"
    message: "flunder names must start with ok-"
`

// bindingYAML binds e2e-names with actions to flunders labelled case=<c>.
func bindingYAML(name, actions, c string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: %s
spec:
  policyName: e2e-names
  validationActions: %s
  matchResources:
    objectSelector:
      matchLabels:
        case: %s
`, name, actions, c)
}

// TestValidatingAdmissionPolicy drives a ValidatingAdmissionPolicy through
// a real wardle with kubectl: a policy that does not compile is refused,
// a Deny binding refuses a Flunder with the policy's message, a Warn
// binding lets it through with a kubectl warning.
func TestValidatingAdmissionPolicy(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")

	bad := strings.Replace(namesPolicyYAML, "object.metadata.name.startsWith('ok-')", "object.metadata.name.startsWith(", 1)
	errOut := w.KubectlStdinFail(bad, "create", "-f", "-")
	if !strings.Contains(errOut, `The ValidatingAdmissionPolicy "e2e-names" is invalid: spec.validations[0].expression: Invalid value: "object.metadata.name.startsWith(": compilation failed: ERROR: <input>:1:33: Syntax error`) {
		t.Errorf("a policy that does not compile: %s", errOut)
	}
	errOut = w.KubectlStdinFail(strings.Replace(bindingYAML("e2e-both", "[Deny, Warn]", "x"), "case: x", "case: x", 1), "create", "-f", "-")
	if !strings.Contains(errOut, `spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn`) {
		t.Errorf("a binding with Deny and Warn: %s", errOut)
	}

	w.KubectlStdin(namesPolicyYAML, "apply", "-f", "-")
	w.KubectlStdin(bindingYAML("e2e-deny", "[Deny]", "vap-deny"), "apply", "-f", "-")
	w.KubectlStdin(bindingYAML("e2e-warn", "[Warn]", "vap-warn"), "apply", "-f", "-")
	applied := time.Now()
	if out := w.Kubectl("get", "validatingadmissionpolicies"); !strings.Contains(out, "VALIDATIONS") || !strings.Contains(out, "e2e-names   1             <unset>") {
		t.Errorf("kubectl get validatingadmissionpolicies:\n%s", out)
	}
	if out := w.Kubectl("get", "validatingadmissionpolicybindings"); !strings.Contains(out, "POLICYNAME") || !strings.Contains(out, "e2e-deny   e2e-names    <unset>") {
		t.Errorf("kubectl get validatingadmissionpolicybindings:\n%s", out)
	}

	t.Run("deny", func(t *testing.T) {
		// kubectl prints an Invalid Status by its causes: this one's has
		// no field, as kube-apiserver's has none.
		want := `The flunders "bad-%d" is invalid: : ValidatingAdmissionPolicy 'e2e-names' with binding 'e2e-deny' denied request: flunder names must start with ok-`
		// The policy is in effect once the informers have it: retry a
		// write that passes until then.
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			_, errOut, err := w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, fmt.Sprintf("bad-%d", i), "vap-deny"), "create", "-f", "-")
			if err != nil && strings.Contains(errOut, fmt.Sprintf(want, i)) {
				t.Logf("the policy took effect %v after kubectl apply", time.Since(applied).Round(time.Millisecond))
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("create: %v\n%s", err, errOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
		w.KubectlStdin(fmt.Sprintf(caseFlunderYAML, "ok-1", "vap-deny"), "create", "-f", "-")
	})

	t.Run("warn", func(t *testing.T) {
		_, errOut, err := w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, "warned", "vap-warn"), "create", "-f", "-")
		if err != nil {
			t.Fatalf("create: %v\n%s", err, errOut)
		}
		if want := "Warning: Validation failed for ValidatingAdmissionPolicy 'e2e-names' with binding 'e2e-warn': flunder names must start with ok-"; !strings.Contains(errOut, want) {
			t.Errorf("stderr %q, want %q", errOut, want)
		}
	})
}
