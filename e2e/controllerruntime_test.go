package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var flunderGVK = schema.GroupVersionKind{Group: "wardle.example.com", Version: "v1beta1", Kind: "Flunder"}

func flunderConfig(name string, labels map[string]any, spec map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "namespace": "default"}
	if labels != nil {
		md["labels"] = labels
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": md}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	u.SetGroupVersionKind(flunderGVK)
	return u
}

func hasApplyEntry(obj *unstructured.Unstructured, manager string) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// TestControllerRuntime: controller-runtime's client applies server-side,
// and a controller-runtime manager reconciles flunders with it, as
// operators do against kube-apiserver.
func TestControllerRuntime(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	cfg := w.RESTConfig()
	scheme := runtime.NewScheme()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("client.Apply patch", func(t *testing.T) {
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		obj := flunderConfig("cr", nil, map[string]any{"flunderReference": "one"})
		if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner("cr-client")); err != nil {
			t.Fatal(err)
		}
		if !hasApplyEntry(obj, "cr-client") || obj.GetResourceVersion() == "" {
			t.Errorf("applied object = %v", obj.Object)
		}
		rival := flunderConfig("cr", nil, map[string]any{"flunderReference": "two"})
		err = c.Patch(ctx, rival, client.Apply, client.FieldOwner("rival"))
		if err == nil || !strings.Contains(err.Error(), `conflict with "cr-client": .spec.flunderReference`) {
			t.Errorf("a rival's apply: %v, want a conflict", err)
		}
		if err := c.Patch(ctx, rival, client.Apply, client.FieldOwner("rival"), client.ForceOwnership); err != nil {
			t.Errorf("forced apply: %v", err)
		}
	})

	t.Run("manager reconciling flunders", func(t *testing.T) {
		mgr, err := manager.New(cfg, manager.Options{Scheme: scheme,
			Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
		if err != nil {
			t.Fatal(err)
		}
		watched := &unstructured.Unstructured{}
		watched.SetGroupVersionKind(flunderGVK)
		err = builder.ControllerManagedBy(mgr).Named("flunder-labeller").For(watched).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				// Every flunder gets a label, owned by the controller.
				cfg := flunderConfig(req.Name, map[string]any{"reconciled": "true"}, nil)
				cfg.SetNamespace(req.Namespace)
				return reconcile.Result{}, mgr.GetClient().Patch(ctx, cfg, client.Apply, client.FieldOwner("flunder-controller"), client.ForceOwnership)
			}))
		if err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		defer func() {
			stop()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("manager: %v", err)
			}
		}()

		w.KubectlStdin("apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: reconciled\nspec:\n  flunderReference: x\n", "create", "-f", "-")
		c := mgr.GetAPIReader()
		deadline := time.Now().Add(90 * time.Second)
		for {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(flunderGVK)
			err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "reconciled"}, got)
			if err == nil && got.GetLabels()["reconciled"] == "true" {
				if !hasApplyEntry(got, "flunder-controller") {
					t.Errorf("the controller's label has no Apply entry: %v", got.GetManagedFields())
				}
				if ref, _, _ := unstructured.NestedString(got.Object, "spec", "flunderReference"); ref != "x" {
					t.Errorf("the controller's apply changed the spec: %q", ref)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the flunder was not reconciled: %v %v", err, got.Object)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
