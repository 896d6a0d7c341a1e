package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWriteSemantics checks writes kube-apiserver answers in a way clients
// rely on: dry runs that answer what the write would, and a PUT carrying the
// uid of another object.
func TestWriteSemantics(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := w.Dynamic().Resource(flundersGVR).Namespace("writes")
	dryRun := []string{metav1.DryRunAll}

	taken, err := res.Create(ctx, newFlunder("writes", "taken", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("dry-run create of a taken name", func(t *testing.T) {
		_, err := res.Create(ctx, newFlunder("writes", "taken", "b"), metav1.CreateOptions{DryRun: dryRun})
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("dry-run create of an existing name: %v, want 409 AlreadyExists", err)
		}
	})

	t.Run("dry-run delete of an object with finalizers", func(t *testing.T) {
		fin := newFlunder("writes", "fin", "a")
		fin.SetFinalizers([]string{"example.com/keep"})
		if _, err := res.Create(ctx, fin, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := w.Kubectl("delete", "--raw", "/apis/wardle.example.com/v1beta1/namespaces/writes/flunders/fin?dryRun=All")
		var answered metav1.PartialObjectMetadata
		if err := json.Unmarshal([]byte(out), &answered); err != nil {
			t.Fatalf("dry-run delete answered %q: %v", out, err)
		}
		if answered.DeletionTimestamp == nil || answered.Name != "fin" {
			t.Errorf("dry-run delete answered %s, want the object with deletionTimestamp set", out)
		}
		stored, err := res.Get(ctx, "fin", metav1.GetOptions{})
		if err != nil || stored.GetDeletionTimestamp() != nil {
			t.Errorf("dry-run delete changed the object: %v %v", err, stored)
		}
	})

	t.Run("PUT with the uid of another object", func(t *testing.T) {
		other := taken.DeepCopy()
		other.SetUID("6b3a3a1e-0000-4000-8000-000000000000")
		_ = unstructured.SetNestedField(other.Object, "c", "spec", "flunderReference")
		_, err := res.Update(ctx, other, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("PUT with another uid: %v, want 409 Conflict", err)
		}
		want := `Operation cannot be fulfilled on flunders.wardle.example.com "taken": Precondition failed: UID in precondition: 6b3a3a1e-0000-4000-8000-000000000000, UID in object meta: ` + string(taken.GetUID())
		if got := err.Error(); got != want {
			t.Errorf("message = %q\nwant      %q", got, want)
		}
		if strings.Contains(err.Error(), "/registry") {
			t.Errorf("the message shows a storage key: %v", err)
		}
	})
}

// TestObjectSizeLimit: an object over the storage's size limit (etcd's, by
// default) is refused with kube-apiserver's 413 naming the limit, on every
// backend, never stored (memory) or answered 503 (etcd).
func TestObjectSizeLimit(t *testing.T) {
	for _, backend := range []string{"memory", "embedded"} {
		t.Run(backend, func(t *testing.T) {
			w := StartWardle(t, "--storage-backend="+backend)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res := w.Dynamic().Resource(flundersGVR).Namespace("big")
			// 2 MiB: under the 3 MiB body limit, over the 1.5 MiB object limit.
			big := newFlunder("big", "big", strings.Repeat("x", 2<<20))
			_, err := res.Create(ctx, big, metav1.CreateOptions{})
			if !apierrors.IsRequestEntityTooLargeError(err) {
				t.Fatalf("create of a 2 MiB object: %v, want 413", err)
			}
			if want := "Request entity too large: limit is 1564672"; err.Error() != want {
				t.Errorf("message = %q, want %q", err.Error(), want)
			}
			if _, err := res.Get(ctx, "big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after the refused create: %v, want NotFound", err)
			}
		})
	}
}
