package openapi_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server"
)

const kubectlPath = "/usr/bin/kubectl"

// runningWardle serves wardle on 127.0.0.1 with real TLS and client
// certificates, and returns a kubeconfig for an admin.
func runningWardle(t *testing.T) (kubeconfig string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pki, err := certs.Bootstrap(dir, "127.0.0.1", ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, "wardle", server.NewEmptyDelegate(), func(c *server.Config) {
		c.Authenticator = nil // the default: client certificates from the CA
		c.SecureServing.Listener = ln
		c.SecureServing.Certificate = &pki.Serving
		c.SecureServing.ClientCA = authn.StaticCAs{Pool: pki.ClientCAs}
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}, wardleGroup(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.PrepareRun().Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})

	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pki.ClientCAs, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get("https://" + ln.Addr().String() + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return pki.Kubeconfig
}

// kubectl runs kubectl with its own HOME, so no cache from elsewhere is
// read or left behind.
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, args...)
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + filepath.Dir(kubeconfig), "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestKubectl runs the real kubectl against a running server: explain
// reads the OpenAPI v3 documents; create and apply detect server-side field
// validation from them, and apply picks its patch type from them.
func TestKubectl(t *testing.T) {
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skipf("%s not found", kubectlPath)
	}
	kc := runningWardle(t)
	dir := filepath.Dir(kc)

	explain := []struct {
		args []string
		want []string
	}{
		{[]string{"explain", "flunders"}, []string{
			"GROUP:      wardle.example.com", "KIND:       Flunder", "VERSION:    v1beta1",
			"Flunder is the sample's namespaced resource", "metadata\t<ObjectMeta>", "Standard object's metadata",
			"spec\t<FlunderSpec>", "Spec is the desired state of the Flunder.", "apiVersion\t<string>", "APIVersion defines"}},
		{[]string{"explain", "flunders.spec"}, []string{
			"FIELD: spec <FlunderSpec>", "flunderReference\t<string>", "A name of another flunder", "referenceType\t<string>", "Flunder, Fischer"}},
		{[]string{"explain", "flunders", "--api-version=wardle.example.com/v1alpha1"}, []string{
			"KIND:       Flunder", "VERSION:    v1alpha1", "spec\t<FlunderSpec>"}},
		{[]string{"explain", "flunders.spec", "--api-version=wardle.example.com/v1alpha1"}, []string{
			"reference\t<string>", "A name of another flunder or fischer"}},
		{[]string{"explain", "fischers"}, []string{
			"KIND:       Fischer", "VERSION:    v1alpha1", "disallowedFlunders\t<[]string>"}},
		{[]string{"explain", "flunders.metadata"}, []string{
			"ObjectMeta is metadata that all persisted resources must have", "creationTimestamp\t<string>",
			"labels\t<map[string]string>", "ownerReferences\t<[]OwnerReference>", "Map of string keys and values"}},
		{[]string{"explain", "flunders.metadata.creationTimestamp"}, []string{"<string>", "CreationTimestamp is a timestamp"}},
	}
	for _, tt := range explain {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := kubectl(t, kc, tt.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	write := func(name, spec string) string {
		p := filepath.Join(dir, name+".yaml")
		doc := "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: " + name + "\n  namespace: default\nspec:\n" + spec
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("create and apply with --validate=strict", func(t *testing.T) {
		out, err := kubectl(t, kc, "create", "-f", write("good", "  flunderReference: a\n"))
		if err != nil || !strings.Contains(out, "flunder.wardle.example.com/good created") {
			t.Fatalf("create: %v\n%s", err, out)
		}
		// The server, not kubectl, rejects the unknown field: kubectl found
		// fieldValidation on the PATCH operation in the v3 document.
		out, err = kubectl(t, kc, "apply", "-f", write("bad", "  foo: bar\n"))
		if err == nil || !strings.Contains(out, `strict decoding error: unknown field "spec.foo"`) {
			t.Errorf("apply with an unknown field: %v\n%s", err, out)
		}
		// Apply to an existing object patches it: with a merge patch, since
		// the document offers no strategic merge patch.
		out, err = kubectl(t, kc, "apply", "-f", write("good", "  flunderReference: b\n"))
		if err != nil || !strings.Contains(out, "flunder.wardle.example.com/good configured") {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		out, err = kubectl(t, kc, "apply", "-f", write("good", "  flunderReference: b\n  foo: bar\n"))
		if err == nil || !strings.Contains(out, `unknown field "spec.foo"`) {
			t.Errorf("apply of an unknown field to an existing object: %v\n%s", err, out)
		}
		out, err = kubectl(t, kc, "get", "flunder", "good", "-o", "jsonpath={.spec.flunderReference}")
		if err != nil || out != "b" {
			t.Errorf("after apply: %v %q", err, out)
		}
	})
}
