package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// rawGet sends method to the escaped path (and query) as written (no client-side
// cleaning or re-escaping) with the credentials of kubeconfig, and returns
// the code and the Status's message and reason (empty for other bodies).
func rawGet(t *testing.T, kubeconfig, method, escapedPath string) (int, string, string) {
	t.Helper()
	return requestAs(t, kubeconfig, method, escapedPath, "", "")
}

// requestAs is rawGet with a body of contentType.
func requestAs(t *testing.T, kubeconfig, method, escapedPath, contentType, body string) (int, string, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host + escapedPath)
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := strings.Cut(escapedPath, "?"); u.EscapedPath() != p {
		t.Fatalf("the client would send %s, not %s", u.EscapedPath(), p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Kind, Message, Reason string
	}
	if json.Unmarshal(answer, &st) == nil && st.Kind == "Status" {
		return resp.StatusCode, st.Message, st.Reason
	}
	return resp.StatusCode, "", ""
}

// TestEscapedPathSegments: a user with no grants cannot reach flunders
// through a namespace or name that authorization and the router read
// differently (it used to list namespace ".." as the non-resource path
// everyone may get); the admin gets the same 400 kube-apiserver's key
// functions give; ordinary escapes address the object they spell.
func TestEscapedPathSegments(t *testing.T) {
	w := StartWardle(t)
	w.KubectlStdin(fmt.Sprintf(flunderYAML, "f1", "x"), "create", "-n", "team-a", "-f", "-")
	mallory := w.NewUser("mallory")
	const g = "/apis/wardle.example.com/v1beta1"
	for _, tc := range []struct {
		path, message string
	}{
		{g + "/namespaces/%2E%2E/flunders", `Namespace parameter invalid: "..": may not be '..'`},
		{g + "/namespaces/team-a%2Fflunders%2Ff1/flunders", `Namespace parameter invalid: "team-a/flunders/f1": may not contain '/'`},
		{g + "/namespaces/team-a/flunders/%2E%2E", `Name parameter invalid: "..": may not be '..'`},
		{g + "/namespaces/team-a/flunders/f1%2Fexec", `Name parameter invalid: "f1/exec": may not contain '/'`},
	} {
		for _, kc := range []string{mallory.Kubeconfig, w.Kubeconfig()} {
			code, msg, reason := rawGet(t, kc, http.MethodGet, tc.path)
			if code != http.StatusBadRequest || msg != tc.message || reason != "BadRequest" {
				t.Errorf("GET %s: %d %s %q, want 400 BadRequest %q", tc.path, code, reason, msg, tc.message)
			}
		}
	}
	// The user still gets 403 for what it may not read, the admin the
	// object, through escapes of ordinary characters.
	if code, _, reason := rawGet(t, mallory.Kubeconfig, http.MethodGet, g+"/namespaces/te%61m-a/flunders/f%31"); code != http.StatusForbidden {
		t.Errorf("mallory GET team-a/f1 through escapes: %d %s, want 403", code, reason)
	}
	if code, msg, _ := rawGet(t, w.Kubeconfig(), http.MethodGet, g+"/namespaces/te%61m-a/flunders/f%31"); code != http.StatusOK {
		t.Errorf("admin GET team-a/f1 through escapes: %d %s, want 200", code, msg)
	}
}

// TestJSONPatchAmplification: a patch of self-doubling copies (the attack
// that drove a server from 83 MiB to 1.58 GiB with twelve; eight here, 8 MiB
// of copies) is refused once its copies add 3 MiB (422), a patch of more
// than 10,000 operations with 413, as kube-apiserver refuses them; the
// flunder is unchanged.
func TestJSONPatchAmplification(t *testing.T) {
	w := StartWardle(t)
	w.KubectlStdin(fmt.Sprintf(flunderYAML, "f1", "x"), "create", "-n", "team-a", "-f", "-")
	const obj = "/apis/wardle.example.com/v1beta1/namespaces/team-a/flunders/f1"
	ops := []string{`{"op":"add","path":"/metadata/annotations","value":{"x":{"a":"` + strings.Repeat("v", 32<<10) + `"}}}`}
	for i := range 8 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations/x","path":"/metadata/annotations/x/c%d"}`, i))
	}
	ops = append(ops, `{"op":"remove","path":"/metadata/annotations"}`)
	code, msg, reason := requestAs(t, w.Kubeconfig(), http.MethodPatch, obj, "application/json-patch+json", "["+strings.Join(ops, ",")+"]")
	if code != http.StatusUnprocessableEntity || reason != "Invalid" || !strings.Contains(msg, "Unable to complete the copy") {
		t.Errorf("self-doubling copies: %d %s %q, want 422 Invalid", code, reason, msg)
	}

	many := make([]string, 10001)
	for i := range many {
		many[i] = `{"op":"test","path":"/metadata/name","value":"f1"}`
	}
	code, msg, reason = requestAs(t, w.Kubeconfig(), http.MethodPatch, obj, "application/json-patch+json", "["+strings.Join(many, ",")+"]")
	if code != http.StatusRequestEntityTooLarge || reason != "RequestEntityTooLarge" ||
		msg != "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001" {
		t.Errorf("10,001 operations: %d %s %q, want 413", code, reason, msg)
	}
	if out := w.Kubectl("get", "flunder", "f1", "-n", "team-a", "-o", "jsonpath={.metadata.annotations}"); strings.TrimSpace(out) != "" {
		t.Errorf("annotations after the refused patches: %q", out)
	}
}

// TestQueryOptionsAsKube: query options kube-apiserver 1.37 answers
// differently from a plain 400: dryRun=Bogus and a delete giving both
// orphanDependents and propagationPolicy are 422 Invalid; limit=-1 lists
// everything; a watch with timeoutSeconds=-1 ends at once, 200, empty.
func TestQueryOptionsAsKube(t *testing.T) {
	w := StartWardle(t)
	for _, n := range []string{"f1", "f2"} {
		w.KubectlStdin(fmt.Sprintf(flunderYAML, n, "x"), "create", "-n", "team-a", "-f", "-")
	}
	const coll = "/apis/wardle.example.com/v1beta1/namespaces/team-a/flunders"
	kc := w.Kubeconfig()
	for _, tc := range []struct {
		method, path, contentType, body string
		code                            int
		message                         string
	}{
		{http.MethodPost, coll + "?dryRun=Bogus", "application/json", `{"metadata":{"name":"f3"}}`, 422,
			`CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`},
		{http.MethodDelete, coll + "/f1?orphanDependents=true&propagationPolicy=Foreground", "", "", 422,
			`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Foreground": orphanDependents and deletionPropagation cannot be both set`},
		{http.MethodGet, coll + "?limit=-1", "", "", 200, ""},
	} {
		code, msg, _ := requestAs(t, kc, tc.method, tc.path, tc.contentType, tc.body)
		if code != tc.code || msg != tc.message {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, code, msg, tc.code, tc.message)
		}
	}
	if out := w.Kubectl("get", "flunders", "-n", "team-a", "-o", "name"); strings.Count(out, "flunder") != 2 {
		t.Errorf("after the refused writes: %q", out)
	}
	start := time.Now()
	code, msg, _ := requestAs(t, kc, http.MethodGet, coll+"?watch=true&timeoutSeconds=-1", "", "")
	if code != 200 || msg != "" {
		t.Errorf("watch timeoutSeconds=-1: %d %q, want 200 and an empty stream", code, msg)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("watch timeoutSeconds=-1 took %v", d)
	}
}

// TestFlunderChangesSubresource: wardle's own streaming subresource,
// flunders/changes, is served behind the whole chain: kubectl get --raw
// reads it, a follower sees each change as it happens, RBAC judges it as
// the subresource (a user who may get flunders may not get their changes;
// view may), and discovery and OpenAPI list it.
func TestFlunderChangesSubresource(t *testing.T) {
	w := StartWardle(t)
	w.KubectlStdin(fmt.Sprintf(flunderYAML, "f1", "x"), "create", "-n", "team-a", "-f", "-")
	const changes = "/apis/wardle.example.com/v1beta1/namespaces/team-a/flunders/f1/changes"
	if out := w.Kubectl("get", "--raw", changes); !regexpMatch(`^\d+ CURRENT f1 reference=x\n$`, out) {
		t.Errorf("kubectl get --raw %s: %q", changes, out)
	}
	if out := w.Kubectl("get", "--raw", "/apis/wardle.example.com/v1beta1"); !strings.Contains(out, `"name":"flunders/changes"`) {
		t.Errorf("discovery lacks flunders/changes: %s", out)
	}
	if out := w.Kubectl("get", "--raw", "/openapi/v2"); !strings.Contains(out, `"/apis/wardle.example.com/v1beta1/namespaces/{namespace}/flunders/{name}/changes"`) {
		t.Error("OpenAPI v2 lacks flunders/changes")
	}

	// A follower sees the patch and the delete, then the stream ends.
	cfg := w.RESTConfig()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+changes+"?follow=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				return "<end>"
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no line in time")
		}
		return ""
	}
	if l := next(); !regexpMatch(`^\d+ CURRENT f1 reference=x$`, l) {
		t.Errorf("first line %q", l)
	}
	w.Kubectl("patch", "flunder", "f1", "-n", "team-a", "--type=merge", "-p", `{"spec":{"flunderReference":"y"}}`)
	if l := next(); !regexpMatch(`^\d+ MODIFIED f1 reference=y$`, l) {
		t.Errorf("after the patch: %q", l)
	}

	// RBAC judges the subresource.
	w.Kubectl("create", "role", "flunder-reader", "-n", "team-a", "--verb=get", "--resource=flunders")
	w.Kubectl("create", "rolebinding", "bob-flunders", "-n", "team-a", "--role=flunder-reader", "--user=bob")
	w.Kubectl("create", "rolebinding", "carol-view", "-n", "team-a", "--clusterrole=view", "--user=carol")
	bob, carol := w.NewUser("bob"), w.NewUser("carol")
	waitUntil(t, 10*time.Second, "the bindings take effect", func() bool {
		_, _, okBob := bob.Kubectl("get", "flunder", "f1", "-n", "team-a")
		_, _, okCarol := carol.Kubectl("get", "flunder", "f1", "-n", "team-a")
		return okBob && okCarol
	})
	code, msg, _ := rawGet(t, bob.Kubeconfig, http.MethodGet, changes)
	if code != http.StatusForbidden || !strings.Contains(msg, `cannot get resource "flunders/changes" in API group "wardle.example.com" in the namespace "team-a"`) {
		t.Errorf("bob: %d %q, want 403 on flunders/changes", code, msg)
	}
	if out, stderr, ok := carol.Kubectl("get", "--raw", changes); !ok || !strings.Contains(out, "CURRENT f1") {
		t.Errorf("carol (view): %q %s", out, stderr)
	}

	w.Kubectl("delete", "flunder", "f1", "-n", "team-a")
	if l := next(); !regexpMatch(`^\d+ DELETED f1 reference=y$`, l) {
		t.Errorf("after the delete: %q", l)
	}
	if l := next(); l != "<end>" {
		t.Errorf("after DELETED: %q, want the end of the stream", l)
	}
}
