package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// rawGet sends method to the escaped path as written (no client-side
// cleaning or re-escaping) with the credentials of kubeconfig, and returns
// the code and the Status's message and reason (empty for other bodies).
func rawGet(t *testing.T, kubeconfig, method, escapedPath string) (int, string, string) {
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
	if u.EscapedPath() != escapedPath {
		t.Fatalf("the client would send %s, not %s", u.EscapedPath(), escapedPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Kind, Message, Reason string
	}
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
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
