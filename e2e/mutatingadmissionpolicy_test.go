package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// mutatingPolicyYAML is a MutatingAdmissionPolicy on flunders with one
// mutation of patchType, and its binding to flunders labelled case=<name>.
func mutatingPolicyYAML(name, patchType, field, expression string) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: %[1]s
spec:
  matchConstraints:
    resourceRules:
    - operations: ["CREATE", "UPDATE"]
      apiGroups: ["wardle.example.com"]
      apiVersions: ["*"]
      resources: ["flunders"]
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: %[2]s
    %[3]s:
      expression: '%[4]s'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: %[1]s
spec:
  policyName: %[1]s
  matchResources:
    objectSelector:
      matchLabels:
        case: %[1]s
`, name, patchType, field, expression)
}

// TestMutatingAdmissionPolicy drives MutatingAdmissionPolicies through a
// real wardle with kubectl: a policy of the wrong type is refused, an
// ApplyConfiguration and a JSONPatch policy label the flunders they bind,
// kubectl get shows the labels, and a failing mutation refuses the write
// with kube-apiserver's message.
func TestMutatingAdmissionPolicy(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")

	bad := mutatingPolicyYAML("e2e-bad", "ApplyConfiguration", "applyConfiguration", `[JSONPatch{op: "remove", path: "/spec"}]`)
	errOut := w.KubectlStdinFail(bad, "create", "-f", "-")
	if !strings.Contains(errOut, `The MutatingAdmissionPolicy "e2e-bad" is invalid: spec.mutations[0].applyConfiguration.expression: Invalid value: "[JSONPatch{op: \"remove\", path: \"/spec\"}]": must evaluate to Object`) {
		t.Errorf("a policy of the wrong type: %s", errOut)
	}

	w.KubectlStdin(mutatingPolicyYAML("e2e-apply", "ApplyConfiguration", "applyConfiguration",
		`Object{metadata: Object.metadata{labels: {"team": "blue"}}}`), "apply", "-f", "-")
	w.KubectlStdin(mutatingPolicyYAML("e2e-patch", "JSONPatch", "jsonPatch",
		`[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/patched-by"), value: request.userInfo.username}]`), "apply", "-f", "-")
	w.KubectlStdin(mutatingPolicyYAML("e2e-fail", "JSONPatch", "jsonPatch",
		`[JSONPatch{op: "remove", path: "/spec/nothing/here"}]`), "apply", "-f", "-")
	applied := time.Now()
	if out := w.Kubectl("get", "mutatingadmissionpolicies"); !strings.Contains(out, "MUTATIONS") || !strings.Contains(out, "e2e-apply   1           <unset>") {
		t.Errorf("kubectl get mutatingadmissionpolicies:\n%s", out)
	}
	if out := w.Kubectl("get", "mutatingadmissionpolicybindings"); !strings.Contains(out, "POLICYNAME") || !strings.Contains(out, "e2e-patch   e2e-patch    <unset>") {
		t.Errorf("kubectl get mutatingadmissionpolicybindings:\n%s", out)
	}

	create := func(t *testing.T, c, key string) string {
		t.Helper()
		return createLabelled(t, w, c, key, applied)
	}

	t.Run("ApplyConfiguration", func(t *testing.T) {
		out := create(t, "e2e-apply", "team:")
		if !strings.Contains(out, "    team: blue\n") || !strings.Contains(out, "    case: e2e-apply\n") {
			t.Errorf("kubectl get flunder -o yaml:\n%s", out)
		}
	})
	t.Run("JSONPatch", func(t *testing.T) {
		out := create(t, "e2e-patch", "example.com/patched-by:")
		if !strings.Contains(out, "    example.com/patched-by: admin\n") {
			t.Errorf("kubectl get flunder -o yaml:\n%s", out)
		}
	})
	t.Run("failure", func(t *testing.T) {
		want := `policy 'e2e-fail' with binding 'e2e-fail' denied request: JSONPath: `
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			_, errOut, err := w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, fmt.Sprintf("e2e-fail-%d", i), "e2e-fail"), "create", "-f", "-")
			if err != nil && strings.Contains(errOut, want) {
				break
			}
			if err != nil || time.Now().After(deadline) {
				t.Fatalf("create: %v\n%s", err, errOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// createLabelled writes flunders labelled case=c until one comes back
// with the label key (the policies are in effect once the informers have
// them) and returns its YAML as kubectl get shows it; since is when the
// policies were applied.
func createLabelled(t *testing.T, w *Wardle, c, key string, since time.Time) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d-%d", c, time.Now().UnixNano()%1e6, i)
		w.KubectlStdin(fmt.Sprintf(caseFlunderYAML, name, c), "create", "-f", "-")
		out := w.Kubectl("get", "flunder", name, "-o", "yaml")
		if strings.Contains(out, key) {
			t.Logf("labelled on attempt %d, %v after kubectl apply", i+1, time.Since(since).Round(time.Millisecond))
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s label 30 s after the policy was applied:\n%s", key, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// paramsMutatingPolicyYAML is a MutatingAdmissionPolicy whose paramKind is
// the core group's ConfigMap, labelling flunders with their param's
// data.team, bound twice: to the configmap "team" and to a missing one
// with parameterNotFoundAction Deny.
const paramsMutatingPolicyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: e2e-params
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - operations: ["CREATE"]
      apiGroups: ["wardle.example.com"]
      apiVersions: ["*"]
      resources: ["flunders"]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"team": params.data.team}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: e2e-params
spec:
  policyName: e2e-params
  paramRef: {name: team, parameterNotFoundAction: Deny}
  matchResources:
    objectSelector:
      matchLabels: {case: e2e-params}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: e2e-params-missing
spec:
  policyName: e2e-params
  paramRef: {name: missing, parameterNotFoundAction: Deny}
  matchResources:
    objectSelector:
      matchLabels: {case: e2e-params-missing}
`

// TestMutatingAdmissionPolicyParamsKubectl drives a MutatingAdmissionPolicy
// whose paramKind is a ConfigMap through wardle --core-api with kubectl:
// the flunders it binds get the param's value as a label, a change of the
// param changes the next write's label, and a binding whose param is
// missing refuses with kube-apiserver's configuration error.
func TestMutatingAdmissionPolicyParamsKubectl(t *testing.T) {
	w := StartWardle(t, "--core-api", "--storage-backend=memory")
	w.Kubectl("create", "configmap", "team", "--from-literal=team=blue")
	w.KubectlStdin(paramsMutatingPolicyYAML, "apply", "-f", "-")
	applied := time.Now()
	if out := w.Kubectl("get", "mutatingadmissionpolicybindings", "e2e-params"); !strings.Contains(out, "e2e-params   */team") {
		t.Errorf("kubectl get mutatingadmissionpolicybindings:\n%s", out)
	}
	if out := createLabelled(t, w, "e2e-params", "team:", applied); !strings.Contains(out, "    team: blue\n") {
		t.Errorf("kubectl get flunder -o yaml:\n%s", out)
	}

	w.Kubectl("patch", "configmap", "team", "-p", `{"data":{"team":"red"}}`)
	changed := time.Now()
	poll(t, "the changed param's label", func() (bool, string) {
		out := createLabelled(t, w, "e2e-params", "team:", changed)
		return strings.Contains(out, "    team: red\n"), out
	})

	want := "policy 'e2e-params' with binding 'e2e-params-missing' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
	refusedEventually(t, w, fmt.Sprintf(caseFlunderYAML, "missing", "e2e-params-missing"), want)
}
