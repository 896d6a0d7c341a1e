package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGarbageCollection: kubectl delete --cascade=background|foreground|
// orphan on flunders linked by ownerReferences, and a flunder whose owner
// never existed, against a real wardle (its garbage collector on by
// default).
func TestGarbageCollection(t *testing.T) {
	w := StartWardle(t, "--storage-backend=memory")
	flunder := func(name string, owners ...string) {
		t.Helper()
		refs := ""
		for _, o := range owners {
			uid := o
			if !strings.HasPrefix(o, "uid:") {
				uid = strings.TrimSpace(w.Kubectl("get", "flunder", o, "-n", "default", "-o", "jsonpath={.metadata.uid}"))
			}
			refs += fmt.Sprintf("\n  - apiVersion: wardle.example.com/v1beta1\n    kind: Flunder\n    name: %s\n    uid: %s\n    blockOwnerDeletion: true", strings.TrimPrefix(o, "uid:"), strings.TrimPrefix(uid, "uid:"))
		}
		if refs != "" {
			refs = "\n  ownerReferences:" + refs
		}
		w.KubectlStdin(fmt.Sprintf("apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: %s\n  namespace: default%s\n", name, refs), "create", "-f", "-")
	}
	exists := func(name string) bool {
		out := w.Kubectl("get", "flunders", "-n", "default", "-o", "name", "--ignore-not-found", "--field-selector=metadata.name="+name)
		return strings.TrimSpace(out) != ""
	}
	waitGone := func(name string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for exists(name) {
			if time.Now().After(deadline) {
				t.Fatalf("flunder %s still there", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Background
	{
		flunder("bg-owner")
		flunder("bg-child", "bg-owner")
		w.Kubectl("delete", "flunder", "bg-owner", "-n", "default", "--cascade=background")
		waitGone("bg-child")
	}
	// Foreground
	{
		flunder("fg-owner")
		flunder("fg-child", "fg-owner")
		// kubectl waits for the owner, which goes after its dependent.
		w.Kubectl("delete", "flunder", "fg-owner", "-n", "default", "--cascade=foreground")
		waitGone("fg-owner")
		if exists("fg-child") {
			t.Error("the owner went before its dependent")
		}
	}
	// Orphan
	{
		flunder("or-owner")
		flunder("or-child", "or-owner")
		w.Kubectl("delete", "flunder", "or-owner", "-n", "default", "--cascade=orphan")
		waitGone("or-owner")
		time.Sleep(time.Second) // give a wrong collection the chance to happen
		if refs := w.Kubectl("get", "flunder", "or-child", "-n", "default", "-o", "jsonpath={.metadata.ownerReferences}"); strings.TrimSpace(refs) != "" {
			t.Errorf("orphan still refers to its owner: %s", refs)
		}
	}
	// Dangling owner
	{
		flunder("dangling", "uid:nobody")
		waitGone("dangling")
	}
}
