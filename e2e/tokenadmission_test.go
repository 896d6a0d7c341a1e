package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// tokenPolicyYAML refuses token requests for the service account "locked"
// and tokens that would live longer than an hour: a policy matching
// serviceaccounts/token, as kube-apiserver runs admission on a
// TokenRequest.
const tokenPolicyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: token-rules}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [serviceaccounts/token]
  validations:
  - expression: "request.name != 'locked'"
    messageExpression: "'no tokens for ' + request.name"
  - expression: "object.kind == 'TokenRequest' && object.spec.expirationSeconds <= 3600"
    message: tokens may live an hour at most
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: token-rules}
spec:
  policyName: token-rules
  validationActions: [Deny]
`

// TestTokenRequestAdmissionPolicy checks that a ValidatingAdmissionPolicy
// sees token requests (kubectl create token) as kube-apiserver's do: it
// refuses one for a service account it names and one asking for too long
// a lifetime, and lets the others through.
func TestTokenRequestAdmissionPolicy(t *testing.T) {
	w := startChain(t)
	w.Kubectl("create", "serviceaccount", "robot", "-n", "default")
	w.Kubectl("create", "serviceaccount", "locked", "-n", "default")
	w.KubectlStdin(tokenPolicyYAML, "apply", "-f", "-")
	// The policy takes effect once the admission informers have it.
	poll(t, "the policy refuses a token for locked", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, errOut, err := w.kubectlRaw(ctx, "create", "token", "locked", "-n", "default")
		return err != nil && strings.Contains(errOut, "no tokens for locked"), errOut
	})
	msg := w.KubectlFail("create", "token", "locked", "-n", "default")
	if want := `ValidatingAdmissionPolicy 'token-rules' with binding 'token-rules' denied request: no tokens for locked`; !strings.Contains(msg, want) {
		t.Errorf("a token for locked: %s\nwant %s", msg, want)
	}
	msg = w.KubectlFail("create", "token", "robot", "-n", "default", "--duration=2h")
	if want := "denied request: tokens may live an hour at most"; !strings.Contains(msg, want) {
		t.Errorf("a two-hour token: %s\nwant %s", msg, want)
	}
	if out := w.Kubectl("create", "token", "robot", "-n", "default"); strings.Count(strings.TrimSpace(out), ".") != 2 {
		t.Errorf("a token for robot: %q, want a JWT", out)
	}
}
