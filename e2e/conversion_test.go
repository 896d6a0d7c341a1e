package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// conversionWebhook serves a CRD conversion webhook over TLS on
// 127.0.0.1: example.com/v1's spec.color is v2's spec.colour. down makes
// it answer 503.
func conversionWebhook(t *testing.T) (url string, caBundle []byte, reviews, down *atomic.Int64) {
	t.Helper()
	reviews, down = &atomic.Int64{}, &atomic.Int64{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() != 0 {
			http.Error(w, "the converter is down", http.StatusServiceUnavailable)
			return
		}
		var review struct {
			Request struct {
				UID               string           `json:"uid"`
				DesiredAPIVersion string           `json:"desiredAPIVersion"`
				Objects           []map[string]any `json:"objects"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reviews.Add(1)
		from, to := "color", "colour"
		if review.Request.DesiredAPIVersion == "example.com/v1" {
			from, to = to, from
		}
		converted := []map[string]any{}
		for _, o := range review.Request.Objects {
			if spec, ok := o["spec"].(map[string]any); ok {
				if v, ok := spec[from]; ok {
					delete(spec, from)
					spec[to] = v
				}
			}
			o["apiVersion"] = review.Request.DesiredAPIVersion
			converted = append(converted, o)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
			"response": map[string]any{"uid": review.Request.UID, "convertedObjects": converted, "result": map[string]any{"status": "Success"}},
		})
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/convert", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), reviews, down
}

const convertedCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: %s
        caBundle: %s
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
              color: {type: string}
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
    subresources:
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              colour: {type: string}
              replicas: {type: integer}
`

// getYAML reads an object with kubectl -o yaml into a map.
func getYAML(t *testing.T, w *Wardle, args ...string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(w.Kubectl(append(args, "-o", "yaml")...)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConversionWebhookWithKubectl serves a CRD with v1 (stored) and v2
// converted by a webhook the test serves over TLS: kubectl reads an
// object in both versions, one created in v2 is stored in v1, client-go's
// dynamic client watches in v2, and with the webhook down kubectl shows
// kube-apiserver's error.
func TestConversionWebhookWithKubectl(t *testing.T) {
	w := startChain(t)
	url, ca, reviews, down := conversionWebhook(t)
	w.KubectlStdin(fmt.Sprintf(convertedCRDYAML, url, base64.StdEncoding.EncodeToString(ca)), "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	waitServed(t, w, "widgets.v2.example.com")

	w.KubectlStdin("apiVersion: example.com/v2\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  colour: red\n  replicas: 1\n", "apply", "-f", "-")
	v1 := getYAML(t, w, "get", "widgets.v1.example.com", "w1")
	if v1["apiVersion"] != "example.com/v1" || fmt.Sprint(v1["spec"]) != "map[color:red replicas:1]" {
		t.Errorf("w1 in v1 (as stored): %v %v", v1["apiVersion"], v1["spec"])
	}
	v2 := getYAML(t, w, "get", "widgets.v2.example.com", "w1")
	if v2["apiVersion"] != "example.com/v2" || fmt.Sprint(v2["spec"]) != "map[colour:red replicas:1]" {
		t.Errorf("w1 in v2: %v %v", v2["apiVersion"], v2["spec"])
	}
	if reviews.Load() == 0 {
		t.Error("the webhook was never called")
	}

	// A watch in v2 through client-go sees an object created in v1.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := w.Dynamic().Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}).Namespace("default")
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list in v2: %v %v", err, list)
	}
	watcher, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	w.KubectlStdin("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  color: blue\n", "apply", "-f", "-")
	select {
	case ev, ok := <-watcher.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		u, _ := ev.Object.(*unstructured.Unstructured)
		if ev.Type != watch.Added || u == nil || u.GetName() != "w2" || u.GetAPIVersion() != "example.com/v2" {
			t.Fatalf("watch event %v %v", ev.Type, ev.Object)
		}
		if c, _, _ := unstructured.NestedString(u.Object, "spec", "colour"); c != "blue" {
			t.Errorf("watched w2: %v", u.Object["spec"])
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}

	// The webhook down: kube-apiserver's error, and the storage version
	// still served.
	down.Store(1)
	out := w.KubectlFail("get", "widgets.v2.example.com", "w1")
	if want := "Error from server: conversion webhook for example.com/v1, Kind=Widget failed: " + url; !strings.Contains(out, want) || !strings.Contains(out, "503 Service Unavailable") {
		t.Errorf("kubectl get with the webhook down:\n%s\nwant %q", out, want)
	}
	w.Kubectl("get", "widgets.v1.example.com", "w1")
}

// waitServed waits until kubectl can list resource.
func waitServed(t *testing.T, w *Wardle, resource string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _, err := w.kubectlRaw(ctx, "get", resource)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not served: %v", resource, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const scalePolicyYAML = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: widget-scale
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [example.com]
      apiVersions: ["*"]
      operations: [UPDATE]
      resources: [widgets/scale]
  validations:
  - expression: object.spec.replicas <= 5
    message: at most 5 widgets
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: widget-scale
spec:
  policyName: widget-scale
  validationActions: [Deny]
`

// TestScaleAdmissionWithKubectl: a ValidatingAdmissionPolicy on
// widgets/scale refuses kubectl scale past its limit, as kube-apiserver's
// admission of the scale subresource does.
func TestScaleAdmissionWithKubectl(t *testing.T) {
	w := startChain(t)
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	waitServed(t, w, "widgets")
	w.KubectlStdin("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  replicas: 1\n", "apply", "-f", "-")
	w.KubectlStdin(scalePolicyYAML, "apply", "-f", "-")
	want := "ValidatingAdmissionPolicy 'widget-scale' with binding 'widget-scale' denied request: at most 5 widgets"
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The policy takes effect once its informer has it: until then a
		// scale within the limit shows nothing.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, errOut, err := w.kubectlRaw(ctx, "scale", "widget", "w1", "--replicas=7")
		cancel()
		if err != nil && strings.Contains(errOut, want) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("kubectl scale --replicas=7: %v\n%s", err, errOut)
		}
		w.Kubectl("scale", "widget", "w1", "--replicas=1")
		time.Sleep(200 * time.Millisecond)
	}
	w.Kubectl("scale", "widget", "w1", "--replicas=3")
	if got := w.Kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"); got != "3" {
		t.Errorf("replicas %q, want 3", got)
	}
}
