package certs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	ca, err := NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.IssueClient("webhook-client", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Written by Marshal: inline data.
	inline := filepath.Join(dir, "inline.kubeconfig")
	want := Kubeconfig{Server: "https://127.0.0.1:9443/authorize", CAPEM: ca.CertPEM, Client: client, Name: "hook", TLSServerName: "hook.local"}
	if err := want.WriteFile(inline); err != nil {
		t.Fatal(err)
	}
	got, err := ReadKubeconfig(inline)
	if err != nil {
		t.Fatal(err)
	}
	if got.Server != want.Server || string(got.CAPEM) != string(want.CAPEM) || string(got.Client.CertPEM) != string(client.CertPEM) ||
		string(got.Client.KeyPEM) != string(client.KeyPEM) || got.TLSServerName != "hook.local" {
		t.Errorf("read %+v", got)
	}
	tc, err := got.ClientTLSConfig()
	if err != nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "hook.local" {
		t.Errorf("TLS config %+v %v", tc, err)
	}

	// Files relative to the kubeconfig, a token file, two contexts.
	for name, data := range map[string][]byte{"ca.crt": ca.CertPEM, "token": []byte("s3cret\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files := filepath.Join(dir, "files.kubeconfig")
	if err := os.WriteFile(files, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://hook:1", certificate-authority: ca.crt}
users:
- name: u
  user: {tokenFile: token}
contexts:
- {name: one, context: {cluster: c, user: u}}
- {name: two, context: {cluster: c}}
current-context: one
`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = ReadKubeconfig(files)
	if err != nil || got.Token != "s3cret" || string(got.CAPEM) != string(ca.CertPEM) || got.Server != "https://hook:1" {
		t.Errorf("files: %+v %v", got, err)
	}

	for name, content := range map[string]string{
		"no current context": "clusters: [{name: c, cluster: {server: x}}]\ncontexts: [{name: a, context: {cluster: c}}, {name: b, context: {cluster: c}}]\n",
		"missing cluster":    "contexts: [{name: a, context: {cluster: nope}}]\n",
		"insecure":           "clusters: [{name: c, cluster: {server: x, insecure-skip-tls-verify: true}}]\ncontexts: [{name: a, context: {cluster: c}}]\n",
		"no server":          "clusters: [{name: c, cluster: {}}]\ncontexts: [{name: a, context: {cluster: c}}]\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadKubeconfig(p); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}
