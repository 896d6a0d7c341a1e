package endpoints_test

import (
	"testing"
)

// TestNegativeLimitListsAll: kube-apiserver ignores a negative limit and
// answers the whole list (200), as for no limit.
func TestNegativeLimitListsAll(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w1", "")
	ts.create(t, "w2", "")
	resp, b := ts.do(t, req{method: "GET", path: ns + "?limit=-1"})
	if resp.StatusCode != 200 {
		t.Fatalf("limit=-1: %d %s", resp.StatusCode, b)
	}
	list := decode(t, b)
	items, _ := list["items"].([]any)
	if len(items) != 2 || path(list, "metadata.continue") != nil {
		t.Errorf("limit=-1: %d items, continue %v: %s", len(items), path(list, "metadata.continue"), b)
	}
}

// TestWatchNegativeTimeoutSeconds: a watch with a negative timeoutSeconds
// ends at once with 200 and an empty stream, as kube-apiserver's, whose
// watch timer fires at once; it does not stay open for the default
// timeout, and sends no initial events.
func TestWatchNegativeTimeoutSeconds(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w1", "")
	w := ts.watch(t, "timeoutSeconds=-1", "")
	if w.resp.StatusCode != 200 {
		t.Fatalf("code %d", w.resp.StatusCode)
	}
	w.ends()
}
