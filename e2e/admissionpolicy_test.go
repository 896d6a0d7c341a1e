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

// costPolicyYAML is a policy whose one validation costs more than the
// per-call limit, bound with Deny to flunders labelled case=vap-cost.
const costPolicyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-cost
spec:
  matchConstraints:
    resourceRules:
    - operations: ["CREATE"]
      apiGroups: ["wardle.example.com"]
      apiVersions: ["*"]
      resources: ["flunders"]
  validations:
  - expression: "lists.range(500).all(i, lists.range(500).all(j, i + j >= 0))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-cost
spec:
  policyName: e2e-cost
  validationActions: [Deny]
  matchResources:
    objectSelector:
      matchLabels:
        case: vap-cost
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
// binding lets it through with a kubectl warning, a policy over the
// per-call cost limit refuses with kube's message.
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

	// A policy whose evaluation can reach the per-call cost limit keeps
	// its cost tracked (one that cannot, e2e-names, runs untracked) and is
	// refused at the limit with kube-apiserver's message.
	t.Run("cost limit", func(t *testing.T) {
		w.KubectlStdin(costPolicyYAML, "apply", "-f", "-")
		want := `ValidatingAdmissionPolicy 'e2e-cost' with binding 'e2e-cost' denied request: expression 'lists.range(500).all(i, lists.range(500).all(j, i + j >= 0))' resulted in error: operation cancelled: actual cost limit exceeded`
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			_, errOut, err := w.kubectlStdinRaw(fmt.Sprintf(caseFlunderYAML, fmt.Sprintf("ok-cost-%d", i), "vap-cost"), "create", "-f", "-")
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

const paramsPolicyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-prefix
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - operations: ["CREATE"]
      apiGroups: ["wardle.example.com"]
      apiVersions: ["*"]
      resources: ["flunders"]
  validations:
  - expression: "object.metadata.name.startsWith(params.data.prefix)"
    messageExpression: "'flunder names must start with ' + params.data.prefix"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-prefix-selected
spec:
  policyName: e2e-prefix
  validationActions: [Deny]
  paramRef:
    namespace: default
    selector:
      matchLabels:
        app: prefixes
  matchResources:
    objectSelector:
      matchLabels:
        case: vap-params
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-prefix-missing
spec:
  policyName: e2e-prefix
  validationActions: [Deny]
  paramRef:
    name: missing
    parameterNotFoundAction: Deny
  matchResources:
    objectSelector:
      matchLabels:
        case: vap-missing
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-prod-namespaces
spec:
  matchConstraints:
    resourceRules:
    - operations: ["CREATE"]
      apiGroups: ["wardle.example.com"]
      apiVersions: ["*"]
      resources: ["flunders"]
  validations:
  - expression: "namespaceObject.metadata.?labels.env.orValue('') != 'prod' || object.metadata.?labels.approved.orValue('') == 'yes'"
    messageExpression: "'flunders in namespace ' + namespaceObject.metadata.name + ' need approval'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-prod-namespaces
spec:
  policyName: e2e-prod-namespaces
  validationActions: [Deny]
`

// refusedEventually creates input until the server refuses it with want
// (a policy is in effect once the informers have it), then returns.
func refusedEventually(t *testing.T, w *Wardle, input, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, errOut, err := w.kubectlStdinRaw(input, "create", "-f", "-")
		if err != nil && strings.Contains(errOut, want) {
			return
		}
		if err == nil {
			// Passed before the policy took effect: remove it for the
			// next try.
			w.KubectlStdin(input, "delete", "-f", "-")
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: %v\n%s\nwant %q", err, errOut, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestValidatingAdmissionPolicyParamsKubectl drives a policy whose
// paramKind is the core group's ConfigMap through wardle --core-api with
// kubectl: a binding whose paramRef selects two configmaps refuses a
// Flunder with each one's message, one whose param is missing refuses
// with kube-apiserver's configuration error, a policy reading
// namespaceObject's labels refuses Flunders in a labelled namespace only,
// and a policy naming a field Flunder lacks gets a status.typeChecking
// warning (kubectl get -o yaml).
func TestValidatingAdmissionPolicyParamsKubectl(t *testing.T) {
	w := StartWardle(t, "--core-api", "--storage-backend=memory")
	w.Kubectl("create", "configmap", "prefix-ok", "--from-literal=prefix=ok-")
	w.Kubectl("label", "configmap", "prefix-ok", "app=prefixes")
	w.Kubectl("create", "ns", "prod")
	w.Kubectl("label", "ns", "prod", "env=prod")
	w.KubectlStdin(paramsPolicyYAML, "apply", "-f", "-")
	if out := w.Kubectl("get", "validatingadmissionpolicies", "e2e-prefix"); !strings.Contains(out, "e2e-prefix   1             v1/ConfigMap") {
		t.Errorf("kubectl get validatingadmissionpolicies:\n%s", out)
	}
	if out := w.Kubectl("get", "validatingadmissionpolicybindings", "e2e-prefix-missing"); !strings.Contains(out, "e2e-prefix   */missing") {
		t.Errorf("kubectl get validatingadmissionpolicybindings:\n%s", out)
	}

	flunder := func(name, c, ns string) string {
		return fmt.Sprintf(caseFlunderYAML, name, c) + "  namespace: " + ns + "\n"
	}
	refusedEventually(t, w, flunder("bad", "vap-params", "default"),
		`The flunders "bad" is invalid: : ValidatingAdmissionPolicy 'e2e-prefix' with binding 'e2e-prefix-selected' denied request: flunder names must start with ok-`)
	w.KubectlStdin(flunder("ok-1", "vap-params", "default"), "create", "-f", "-")

	// A second selected param: each is evaluated; the new one's prefix
	// refuses what the first lets through.
	w.Kubectl("create", "configmap", "prefix-ok-a", "--from-literal=prefix=ok-a")
	w.Kubectl("label", "configmap", "prefix-ok-a", "app=prefixes")
	refusedEventually(t, w, flunder("ok-2", "vap-params", "default"),
		`ValidatingAdmissionPolicy 'e2e-prefix' with binding 'e2e-prefix-selected' denied request: flunder names must start with ok-a`)
	w.KubectlStdin(flunder("ok-a1", "vap-params", "default"), "create", "-f", "-")

	refusedEventually(t, w, flunder("ok-3", "vap-missing", "default"),
		"ValidatingAdmissionPolicy 'e2e-prefix' with binding 'e2e-prefix-missing' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")
	// The param created, the binding passes what its prefix allows.
	w.Kubectl("create", "configmap", "missing", "--from-literal=prefix=ok-")
	poll(t, "the missing param found", func() (bool, string) {
		_, errOut, err := w.kubectlStdinRaw(flunder("ok-4", "vap-missing", "default"), "create", "-f", "-")
		return err == nil, errOut
	})

	refusedEventually(t, w, flunder("ok-5", "none", "prod"),
		`The flunders "ok-5" is invalid: : ValidatingAdmissionPolicy 'e2e-prod-namespaces' with binding 'e2e-prod-namespaces' denied request: flunders in namespace prod need approval`)
	w.KubectlStdin(strings.Replace(flunder("ok-6", "none", "prod"), "    case: none", "    case: none\n    approved: \"yes\"", 1), "create", "-f", "-")
	w.KubectlStdin(flunder("ok-7", "none", "default"), "create", "-f", "-")

	// A field Flunder does not have: the policy is stored, and the type
	// checker writes a warning to its status.
	w.KubectlStdin(typoPolicyYAML, "apply", "-f", "-")
	want := "wardle.example.com/v1beta1, Kind=Flunder: ERROR: <input>:1:7: undefined field 'nope'"
	poll(t, "status.typeChecking", func() (bool, string) {
		out := w.Kubectl("get", "validatingadmissionpolicy", "e2e-typo", "-o", "yaml")
		return strings.Contains(out, "typeChecking:") && strings.Contains(out, want) &&
			strings.Contains(out, "fieldRef: spec.validations[0].expression") && strings.Contains(out, "observedGeneration: 1"), out
	})
}

const typoPolicyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-typo
spec:
  matchConstraints:
    resourceRules:
    - operations: ["CREATE"]
      apiGroups: ["wardle.example.com"]
      apiVersions: ["v1beta1"]
      resources: ["flunders"]
  validations:
  - expression: "object.nope == 'x'"
`

const limitCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: limits.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: limits, singular: limit, kind: Limit}
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
              maxReplicas: {type: integer}
`

const limitPoliciesYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-limits
spec:
  paramKind: {apiVersion: example.com/v1, kind: Limit}
  matchConstraints:
    resourceRules:
    - operations: ["CREATE"]
      apiGroups: ["example.com"]
      apiVersions: ["v1"]
      resources: ["widgets"]
  validations:
  - expression: "object.spec.replicas <= params.spec.maxReplicas"
    messageExpression: "'replicas must be at most ' + string(params.spec.maxReplicas)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-limits
spec:
  policyName: e2e-limits
  validationActions: [Deny]
  paramRef: {name: small}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-limits-typo
spec:
  paramKind: {apiVersion: example.com/v1, kind: Limit}
  matchConstraints:
    resourceRules:
    - operations: ["CREATE"]
      apiGroups: ["example.com"]
      apiVersions: ["v1"]
      resources: ["widgets"]
  validations:
  - expression: "object.spec.replicas <= params.spec.maxReplica"
`

// TestValidatingAdmissionPolicyCRDParamsKubectl: a policy whose paramKind
// is a CRD created after it, on the custom resources of another CRD,
// through the chain (extensions server first) with kubectl: kube's
// configuration error while the kind is not served, then while its param
// is missing, then the param's limit refusing a Widget; a typo in a field
// of the CRD-typed params shows in status.typeChecking.
func TestValidatingAdmissionPolicyCRDParamsKubectl(t *testing.T) {
	w := startChain(t)
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	w.KubectlStdin(limitPoliciesYAML, "apply", "-f", "-")

	widget := func(name string, replicas int) string {
		return fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: %s, namespace: default}\nspec: {replicas: %d}\n", name, replicas)
	}
	refusedEventually(t, w, widget("w1", 1),
		`ValidatingAdmissionPolicy 'e2e-limits' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Limit'`)

	w.KubectlStdin(limitCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/limits.example.com", "--timeout=60s")
	refusedEventually(t, w, widget("w1", 1),
		"ValidatingAdmissionPolicy 'e2e-limits' with binding 'e2e-limits' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction")

	w.KubectlStdin("apiVersion: example.com/v1\nkind: Limit\nmetadata: {name: small}\nspec: {maxReplicas: 3}\n", "apply", "-f", "-")
	refusedEventually(t, w, widget("w2", 5),
		`ValidatingAdmissionPolicy 'e2e-limits' with binding 'e2e-limits' denied request: replicas must be at most 3`)
	w.KubectlStdin(widget("w3", 3), "create", "-f", "-")

	// The type checker typed params by the Limit CRD's schema once it was
	// served: the policy is checked again at its next generation.
	w.Kubectl("patch", "validatingadmissionpolicy", "e2e-limits-typo", "--type=json",
		`-p=[{"op":"add","path":"/spec/validations/-","value":{"expression":"true"}}]`)
	want := "example.com/v1, Kind=Widget: ERROR: <input>:1:36: undefined field 'maxReplica'"
	poll(t, "status.typeChecking", func() (bool, string) {
		out := w.Kubectl("get", "validatingadmissionpolicy", "e2e-limits-typo", "-o", "yaml")
		return strings.Contains(out, want) && strings.Contains(out, "observedGeneration: 2"), out
	})
}
