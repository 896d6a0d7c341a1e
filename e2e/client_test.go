package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

func newFlunder(ns, name, ref string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wardle.example.com/v1beta1",
		"kind":       "Flunder",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"flunderReference": ref},
	}}
}

// TestInformer checks that a client-go dynamic informer (which streams its
// initial list with sendInitialEvents by default in client-go 0.37) syncs and
// sees adds, updates and deletes.
func TestInformer(t *testing.T) {
	_, client := startInProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := client.Resource(flundersGVR).Namespace("inf")
	if _, err := res.Create(ctx, newFlunder("inf", "before", "x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "inf", nil)
	seen := recordEvents(t, ctx, factory, flundersGVR, "spec", "flunderReference")
	obj, err := res.Create(ctx, newFlunder("inf", "during", "y"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(obj.Object, "z", "spec", "flunderReference"); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := res.Delete(ctx, "during", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, seen, "add before, add during, update during z, delete during")
}

// recordEvents starts an informer of gvr from factory and returns what its
// handlers have seen so far: "add <name>", "update <name> <the string at
// field>", "delete <name>". It fails the test unless the informer syncs.
func recordEvents(t *testing.T, ctx context.Context, factory dynamicinformer.DynamicSharedInformerFactory, gvr schema.GroupVersionResource, field ...string) func() string {
	t.Helper()
	informer := factory.ForResource(gvr).Informer()
	var mu sync.Mutex
	var seen []string
	record := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { record("add " + obj.(*unstructured.Unstructured).GetName()) },
		UpdateFunc: func(_, obj any) {
			u := obj.(*unstructured.Unstructured)
			v, _, _ := unstructured.NestedString(u.Object, field...)
			record("update " + u.GetName() + " " + v)
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			record("delete " + obj.(*unstructured.Unstructured).GetName())
		},
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync within 30s: does the server end its initial events with a bookmark?")
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(seen, ", ")
	}
}

// waitEvents waits until seen reports want.
func waitEvents(t *testing.T, seen func() string, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := seen()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("informer saw [%s], want [%s]", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestErrors checks the Status errors client-go branches on.
func TestErrors(t *testing.T) {
	_, client := startInProcess(t)
	ctx := context.Background()
	res := client.Resource(flundersGVR).Namespace("errs")

	_, err := res.Get(ctx, "missing", metav1.GetOptions{})
	var se *apierrors.StatusError
	if !apierrors.IsNotFound(err) || !errors.As(err, &se) {
		t.Fatalf("get missing: %v", err)
	}
	if d := se.ErrStatus.Details; d == nil || d.Name != "missing" || d.Group != "wardle.example.com" || d.Kind != "flunders" {
		t.Errorf("NotFound details = %+v", se.ErrStatus.Details)
	}
	if se.ErrStatus.Message != `flunders.wardle.example.com "missing" not found` {
		t.Errorf("NotFound message = %q", se.ErrStatus.Message)
	}

	obj, err := res.Create(ctx, newFlunder("errs", "stale", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Create(ctx, newFlunder("errs", "stale", "a"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
	fresh := obj.DeepCopy()
	_ = unstructured.SetNestedField(fresh.Object, "b", "spec", "flunderReference")
	if _, err := res.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// obj still carries the first resourceVersion.
	_ = unstructured.SetNestedField(obj.Object, "c", "spec", "flunderReference")
	_, err = res.Update(ctx, obj, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want Conflict", err)
	}
	if !strings.Contains(err.Error(), "the object has been modified; please apply your changes to the latest version and try again") {
		t.Errorf("conflict message: %v", err)
	}

	bad := newFlunder("errs", "bad", "")
	_ = unstructured.SetNestedField(bad.Object, "Fischer", "spec", "referenceType")
	_, err = res.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) {
		t.Fatalf("invalid create: %v", err)
	}
	if c := se.ErrStatus.Details.Causes; len(c) != 1 || c[0].Field != "spec.fischerReference" || c[0].Type != metav1.CauseTypeFieldValueInvalid {
		t.Errorf("invalid causes = %+v", c)
	}

	// FlowSchemas are named as kube-apiserver 1.37 names them (a DNS
	// subdomain), not as RBAC objects are (any path segment).
	schemas := client.Resource(schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"})
	fs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
		"metadata": map[string]any{"name": "system:alice"},
		"spec": map[string]any{
			"priorityLevelConfiguration": map[string]any{"name": "global-default"},
			"matchingPrecedence":         int64(500),
			"rules": []any{map[string]any{
				"subjects":      []any{map[string]any{"kind": "User", "user": map[string]any{"name": "alice"}}},
				"resourceRules": []any{map[string]any{"verbs": []any{"*"}, "apiGroups": []any{"*"}, "resources": []any{"*"}, "namespaces": []any{"*"}}},
			}},
		},
	}}
	_, err = schemas.Create(ctx, fs, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) {
		t.Fatalf("create FlowSchema system:alice: %v, want Invalid", err)
	}
	if c := se.ErrStatus.Details.Causes; len(c) != 1 || c[0].Field != "metadata.name" || !strings.HasPrefix(c[0].Message, `Invalid value: "system:alice": a lowercase RFC 1123 subdomain must consist of`) {
		t.Errorf("FlowSchema system:alice causes = %+v", c)
	}

	// Three MiB is the body limit.
	big := newFlunder("errs", "big", strings.Repeat("x", 3<<20))
	_, err = res.Create(ctx, big, metav1.CreateOptions{})
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("big create: %v, want RequestEntityTooLarge", err)
	}
}
