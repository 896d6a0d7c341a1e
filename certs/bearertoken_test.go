package certs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apikit-dev/apikit/certs"
)

// TestBearerTokenRotates: a kubeconfig's tokenFile is read again at every
// call, as a projected service-account token is rotated under a pod.
func TestBearerTokenRotates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("token", "first-token\n")
	write("kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	k, err := certs.ReadKubeconfig(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if k.Token != "first-token" || k.TokenFile != filepath.Join(dir, "token") || k.BearerToken() != "first-token" {
		t.Fatalf("read %q from %q, bearer %q", k.Token, k.TokenFile, k.BearerToken())
	}
	write("token", "second-token")
	if got := k.BearerToken(); got != "second-token" {
		t.Errorf("after rotation: %q", got)
	}
	os.Remove(filepath.Join(dir, "token"))
	if got := k.BearerToken(); got != "first-token" {
		t.Errorf("with the file gone: %q, want the token read at start", got)
	}
	if got := (certs.Kubeconfig{Token: "inline"}).BearerToken(); got != "inline" {
		t.Errorf("an inline token: %q", got)
	}
}
