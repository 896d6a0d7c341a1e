package endpoints_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
)

// jsonPatchOps is a JSON patch of n replace operations.
func jsonPatchOps(n int) string {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"replace","path":"/spec/owner","value":"o%d"}`, i)
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// TestPatchOperationLimit: a JSON patch of more than 10,000 operations is
// refused with 413, as kube-apiserver refuses it.
func TestPatchOperationLimit(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w", `{"owner":"o"}`)
	resp, b := ts.do(t, req{method: "PATCH", path: ns + "/w", body: jsonPatchOps(10001), contentType: "application/json-patch+json"})
	wantStatus(t, resp, b, 413, meta.StatusReasonRequestEntityTooLarge,
		"Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001")
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w", body: jsonPatchOps(10000), contentType: "application/json-patch+json"})
	if resp.StatusCode != 200 || path(decode(t, b), "spec.owner") != "o9999" {
		t.Errorf("10,000 operations: %d %.300s", resp.StatusCode, b)
	}
}

// TestPatchCopyAmplification: copies of copies, each doubling a value, are
// stopped once they have added JSONPatchMaxCopyBytes (422), instead of
// growing the object (and the server's memory) exponentially from a small
// patch.
func TestPatchCopyAmplification(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w", "")
	value := strings.Repeat("v", 32<<10)
	ops := []string{`{"op":"add","path":"/spec/free","value":{"x":{"a":"` + value + `"}}}`}
	// Eight doublings of 32 KiB copy 8 MiB in all; the limit is 3 MiB.
	for i := range 8 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec/free/x","path":"/spec/free/x/c%d"}`, i))
	}
	ops = append(ops, `{"op":"remove","path":"/spec/free"}`)
	patch := "[" + strings.Join(ops, ",") + "]"
	resp, b := ts.do(t, req{method: "PATCH", path: ns + "/w", body: patch, contentType: "application/json-patch+json"})
	if resp.StatusCode != 422 {
		t.Fatalf("self-doubling copies: %d %.300s, want 422", resp.StatusCode, b)
	}
	st := decode(t, b)
	msg, _ := st["message"].(string)
	if st["reason"] != string(meta.StatusReasonInvalid) ||
		!strings.HasPrefix(msg, "the server rejected our request due to an error in our request: Unable to complete the copy, the accumulated size increase of copy is ") ||
		!strings.HasSuffix(msg, fmt.Sprintf("exceeding the limit %d", 3<<20)) {
		t.Errorf("self-doubling copies: %s", b)
	}
	// Copies under the limit still apply.
	small := `[{"op":"add","path":"/spec/free","value":{"x":{"a":"v"}}},{"op":"copy","from":"/spec/free/x","path":"/spec/free/y"}]`
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w", body: small, contentType: "application/json-patch+json"})
	if resp.StatusCode != 200 || path(decode(t, b), "spec.free.y.a") != "v" {
		t.Errorf("a small copy: %d %.300s", resp.StatusCode, b)
	}
}

// TestPatchResultSize: whatever the patch type, an object a patch makes
// larger than the object limit (by default the storage's,
// storage.DefaultMaxObjectBytes) is refused with 413 before it is decoded,
// though each body is under the body limit.
func TestPatchResultSize(t *testing.T) {
	oneMiB := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, contentType, patch string
		limit                    int64 // Config.MaxObjectBytes; 0 for the default
		owner                    string
	}{
		{"merge", "application/merge-patch+json", `{"spec":{"tags":["` + oneMiB + `"]}}`, 0, oneMiB},
		{"strategic", "application/strategic-merge-patch+json", `{"spec":{"tags":["` + oneMiB + `"]}}`, 0, oneMiB},
		{"json", "application/json-patch+json", `[{"op":"add","path":"/spec/tags","value":["` + oneMiB + `"]}]`, 0, oneMiB},
		{"json copy", "application/json-patch+json", `[{"op":"copy","from":"/spec/owner","path":"/spec/raw"}]`, 0, oneMiB},
		{"configured limit", "application/merge-patch+json", `{"spec":{"tags":["` + strings.Repeat("y", 70<<10) + `"]}}`, 64 << 10, "o"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(c *server.Config) { c.MaxObjectBytes = tc.limit })
			ts.create(t, "w", `{"owner":"`+tc.owner+`"}`)
			limit := tc.limit
			if limit == 0 {
				limit = storage.DefaultMaxObjectBytes
			}
			resp, b := ts.do(t, req{method: "PATCH", path: ns + "/w", body: tc.patch, contentType: tc.contentType})
			wantStatus(t, resp, b, 413, meta.StatusReasonRequestEntityTooLarge, fmt.Sprintf("Request entity too large: limit is %d", limit))
			resp, b = ts.do(t, req{method: "GET", path: ns + "/w"})
			if resp.StatusCode != 200 || path(decode(t, b), "spec.tags") != nil {
				t.Errorf("after the refused patch: %d %.200s", resp.StatusCode, b)
			}
		})
	}
}
