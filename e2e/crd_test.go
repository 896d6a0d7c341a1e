package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
)

// startChain starts examples/controlplane, the chain extensions -> core
// -> aggregator in one process, with a fresh data directory.
func startChain(t *testing.T) *Wardle {
	t.Helper()
	w := &Wardle{t: t, DataDir: t.TempDir(), Port: freePort(t), Binary: "controlplane"}
	t.Cleanup(func() { w.Stop() })
	w.Start()
	return w
}

const widgetCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
    categories: [all]
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
            x-kubernetes-validations:
            - {rule: "self.color != 'black'", message: black is not a color}
            properties:
              color: {type: string, default: blue}
              replicas: {type: integer, minimum: 0, maximum: 10}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
`

// TestCustomResourceDefinitionsWithKubectl drives a CRD's life with
// kubectl against the chain: apply, Established, custom resources
// defaulted, pruned and validated (a CEL rule too), printer columns, kubectl
// explain, short names and
// categories, kubectl scale, status only through /status, and deleting
// the CRD deletes its objects.
func TestCustomResourceDefinitionsWithKubectl(t *testing.T) {
	w := startChain(t)
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	if out := w.Kubectl("get", "crd"); !strings.Contains(out, "NAME") || !strings.Contains(out, "CREATED AT") || !strings.Contains(out, "widgets.example.com") {
		t.Errorf("kubectl get crd:\n%s", out)
	}

	// kubectl validates strictly by default: a field the schema lacks is
	// refused, as kube-apiserver refuses it; without validation it is pruned.
	const w1 = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {replicas: 2, shape: round}\n"
	if msg := kubectlStdinFail(t, w, w1, "apply", "-f", "-"); !strings.Contains(msg, `strict decoding error: unknown field "spec.shape"`) {
		t.Errorf("an unknown field under kubectl's strict validation: %s", msg)
	}
	w.KubectlStdin(w1, "apply", "--validate=false", "-f", "-")
	if got := w.Kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.color}|{.spec.shape}"); got != "blue|" {
		t.Errorf("spec.color|spec.shape = %q, want the default and the unknown field pruned", got)
	}
	out := w.Kubectl("get", "wd")
	if !strings.Contains(out, "COLOR") || !strings.Contains(out, "REPLICAS") || !strings.Contains(out, "w1") || !strings.Contains(out, "blue") {
		t.Errorf("kubectl get wd:\n%s", out)
	}
	if out := w.Kubectl("get", "all", "-n", "default"); !strings.Contains(out, "COLOR") || !strings.Contains(out, "w1") {
		t.Errorf("kubectl get all (the category):\n%s", out)
	}
	// The schema's errors and the CEL rules' failures come together,
	// unless a value has the wrong type: then kube-apiserver says the
	// rules were not checked, and the scale path's accessor fails too.
	if msg := kubectlStdinFail(t, w, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: default}\nspec: {replicas: 11, color: black}\n", "create", "-f", "-"); !strings.Contains(msg, "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10") ||
		!strings.Contains(msg, "spec: Invalid value: black is not a color") {
		t.Errorf("replicas 11 and color black: %s", msg)
	}
	if msg := kubectlStdinFail(t, w, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: default}\nspec: {replicas: two, color: black}\n", "create", "-f", "-", "--validate=false"); !strings.Contains(msg, ".spec.replicas accessor error: two is of the type string, expected int64") ||
		!strings.Contains(msg, "some validation rules were not checked because the object was invalid") || strings.Contains(msg, "black is not a color") {
		t.Errorf("replicas two: %s", msg)
	}

	if msg := kubectlStdinFail(t, w, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3, namespace: default}\nspec: {color: black}\n", "create", "-f", "-"); !strings.Contains(msg, "black is not a color") {
		t.Errorf("a CR breaking the CEL rule: %s", msg)
	}

	// kubectl scale, through the scale subresource.
	if out := w.Kubectl("scale", "widget", "w1", "--replicas=4"); !strings.Contains(out, "scaled") {
		t.Errorf("kubectl scale: %s", out)
	}
	if got := w.Kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"); got != "4" {
		t.Errorf("spec.replicas after scale = %q", got)
	}
	// kubectl scale's write is kubectl's, on the scale subresource.
	if got := w.Kubectl("get", "widget", "w1", "-o", `jsonpath={.metadata.managedFields[?(@.subresource=="scale")].manager}`); got != "kubectl" {
		t.Errorf("the manager of the scale subresource's write = %q, want kubectl", got)
	}
	// Status only through /status.
	w.Kubectl("patch", "widget", "w1", "--type=merge", "-p", `{"status":{"replicas":3}}`)
	if got := w.Kubectl("get", "widget", "w1", "-o", "jsonpath={.status.replicas}"); got != "" {
		t.Errorf("status.replicas = %q after patching the main resource", got)
	}
	w.Kubectl("patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":3}}`)
	if got := w.Kubectl("get", "widget", "w1", "-o", "jsonpath={.status.replicas}"); got != "3" {
		t.Errorf("status.replicas = %q after patching /status", got)
	}
	// /status is validated by the status schema, whose messages name the
	// path from .status.
	if _, msg, err := w.kubectlRaw(context.Background(), "patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":"x"}}`); err == nil ||
		!strings.Contains(msg, `status.replicas: Invalid value: "string": replicas in body must be of type integer: "string"`) {
		t.Errorf("a status of the wrong type: %v %s", err, msg)
	}

	// kubectl explain reads the schema from OpenAPI.
	if out := w.Kubectl("explain", "widgets.spec"); !strings.Contains(out, "color") || !strings.Contains(out, "replicas") {
		t.Errorf("kubectl explain widgets.spec:\n%s", out)
	}

	// Deleting the CRD deletes its objects, then unserves them.
	w.Kubectl("delete", "crd", "widgets.example.com", "--timeout=60s")
	if out, _, err := w.kubectlRaw(context.Background(), "get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/w1"); err == nil {
		t.Errorf("w1 outlived its CRD: %s", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, errOut, err := w.kubectlRaw(ctx, "get", "widgets", "-A")
		cancel()
		// kubectl's cached discovery may still list widgets: then the
		// list itself is refused.
		if err != nil && (strings.Contains(errOut, `the server doesn't have a resource type "widgets"`) ||
			strings.Contains(errOut, "the server could not find the requested resource")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("widgets still served after the CRD was deleted: %v %s", err, errOut)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubectlStdinFail runs kubectl with input, expecting it to fail, and
// returns its stderr.
func kubectlStdinFail(t *testing.T, w *Wardle, input string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := w.kubectlCmd(ctx, args...)
	cmd.Stdin = strings.NewReader(input)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("kubectl %s succeeded, want failure", strings.Join(args, " "))
	}
	return stderr.String()
}

// TestCustomResourcesWithClientGo creates, lists and watches custom
// resources with client-go's dynamic client and informer.
func TestCustomResourcesWithClientGo(t *testing.T) {
	w := startChain(t)
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	client := w.Dynamic()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := client.Resource(gvr).Namespace("default")
	widget := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(1)}}}
	}
	if _, err := res.Create(ctx, widget("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "default", nil)
	seen := recordEvents(t, ctx, factory, gvr, "spec", "color")
	obj, err := res.Create(ctx, widget("during"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _ := unstructured.NestedString(obj.Object, "spec", "color"); c != "blue" {
		t.Errorf("spec.color = %q, want the default", c)
	}
	if err := unstructured.SetNestedField(obj.Object, "red", "spec", "color"); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := res.Delete(ctx, "during", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := res.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}
	waitEvents(t, seen, "add before, add during, update during red, delete during")
}
