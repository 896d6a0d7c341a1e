package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestPagedListRemainingItemCount pages through flunders the way client-go
// does, through the watch cache of a wardle on its embedded etcd: each page
// says how many items follow it (metadata.remainingItemCount), counted in
// the namespace listed and at the first page's revision, even after writes
// (a continued page is read at that revision, as kube-apiserver reads it);
// a page with a label selector has no count, as on kube-apiserver.
func TestPagedListRemainingItemCount(t *testing.T) {
	w := StartWardle(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	flunders := w.Dynamic().Resource(schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1beta1", Resource: "flunders"})
	create := func(ns, name string) {
		t.Helper()
		f := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "pages"}},
			"spec":     map[string]any{"flunderReference": "x"},
		}}
		if _, err := flunders.Namespace(ns).Create(ctx, f, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s/%s: %v", ns, name, err)
		}
	}
	for i := range 7 {
		create("pages", fmt.Sprintf("p-%d", i))
	}
	for i := range 3 {
		create("other", fmt.Sprintf("o-%d", i))
	}
	remaining := func(l *unstructured.UnstructuredList) string {
		if n := l.GetRemainingItemCount(); n != nil {
			return fmt.Sprint(*n)
		}
		return "none"
	}
	names := func(l *unstructured.UnstructuredList) (out []string) {
		for _, it := range l.Items {
			out = append(out, it.GetName())
		}
		return out
	}

	// Three pages of a namespace, with writes between the first two that
	// the later pages, at the first page's revision, do not see: one
	// delete and two creates after the first page, which a count of the
	// namespace as it is now would see as one more.
	pages := flunders.Namespace("pages")
	l, err := pages.List(ctx, metav1.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l); !slices.Equal(got, []string{"p-0", "p-1", "p-2"}) || remaining(l) != "4" || l.GetContinue() == "" {
		t.Fatalf("first page %v, remainingItemCount %s, continue %q; want p-0..p-2, 4 and a token", got, remaining(l), l.GetContinue())
	}
	if err := pages.Delete(ctx, "p-6", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create("pages", "p-7")
	create("pages", "p-8")
	l, err = pages.List(ctx, metav1.ListOptions{Limit: 3, Continue: l.GetContinue()})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l); !slices.Equal(got, []string{"p-3", "p-4", "p-5"}) || remaining(l) != "1" {
		t.Fatalf("second page %v, remainingItemCount %s; want p-3..p-5 and 1 (p-6, at the first page's revision)", got, remaining(l))
	}
	l, err = pages.List(ctx, metav1.ListOptions{Limit: 3, Continue: l.GetContinue()})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l); !slices.Equal(got, []string{"p-6"}) || remaining(l) != "none" || l.GetContinue() != "" {
		t.Fatalf("last page %v, remainingItemCount %s, continue %q; want p-6 alone, none and none", got, remaining(l), l.GetContinue())
	}

	// Every namespace: 8 in pages, 3 in other.
	l, err = flunders.List(ctx, metav1.ListOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 4 || remaining(l) != "7" {
		t.Fatalf("a page of every namespace: %v, remainingItemCount %s; want 4 items and 7", names(l), remaining(l))
	}

	// A label selector: the page has more after it, and no count.
	l, err = pages.List(ctx, metav1.ListOptions{Limit: 3, LabelSelector: "app=pages"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 3 || remaining(l) != "none" || l.GetContinue() == "" {
		t.Fatalf("a selected page: %v, remainingItemCount %s, continue %q; want 3 items, none and a token", names(l), remaining(l), l.GetContinue())
	}
}
