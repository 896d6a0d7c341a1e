package encryption_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/encryption"
	"github.com/apikit-dev/apikit/storage/memory"
)

var (
	key1 = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	key2 = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
)

const gcmConfig = `
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys:
      - name: key1
        secret: KEY1
  - identity: {}
`

func config(s string) string {
	return strings.NewReplacer("KEY1", key1, "KEY2", key2).Replace(s)
}

func mustSet(t *testing.T, cfg string) *encryption.Set {
	t.Helper()
	c, err := encryption.Parse([]byte(config(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := encryption.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var secrets = meta.GroupResource{Resource: "secrets"}

// TestProviders: each provider writes kube's prefix and reads back what it
// wrote; the value is not in the stored bytes.
func TestProviders(t *testing.T) {
	for _, tc := range []struct{ provider, secret string }{
		{"aescbc", key1}, {"aesgcm", key1}, {"secretbox", key1},
		{"aesgcm", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 16))},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			set := mustSet(t, `
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: ["*.*"]
  providers:
  - `+tc.provider+`:
      keys:
      - {name: k, secret: "`+tc.secret+`"}
`)
			tr := set.For(secrets)
			for _, plain := range [][]byte{nil, []byte("x"), []byte(`{"data":{"password":"c2VjcmV0"}}`), bytes.Repeat([]byte("y"), 64)} {
				stored, err := tr.ToStorage("/registry/secrets/ns/a", plain)
				if err != nil {
					t.Fatal(err)
				}
				if prefix := "k8s:enc:" + tc.provider + ":v1:k:"; !bytes.HasPrefix(stored, []byte(prefix)) {
					t.Fatalf("stored %q, want prefix %q", stored, prefix)
				}
				if len(plain) > 4 && bytes.Contains(stored, plain) {
					t.Fatalf("plaintext in %q", stored)
				}
				got, err := tr.FromStorage("/registry/secrets/ns/a", stored)
				if err != nil || !bytes.Equal(got, plain) {
					t.Fatalf("read back %q, %v; want %q", got, err, plain)
				}
				if tc.provider == "aesgcm" {
					// The key is authenticated: a value moved to another
					// key does not decrypt.
					if _, err := tr.FromStorage("/registry/secrets/ns/b", stored); err == nil {
						t.Error("an AES-GCM value decrypted under another key")
					}
				}
			}
		})
	}
}

// TestKubeFormat: values as kube-apiserver writes them (computed by hand
// from its documented layout) are read.
func TestKubeFormat(t *testing.T) {
	set := mustSet(t, `
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - {name: key1, secret: KEY1}
`)
	// aescbc with the all-zero IV: the IV, then AES-CBC of "hello" padded
	// with eleven 0x0b bytes, under the key of 32 0x01 bytes.
	stored := append([]byte("k8s:enc:aescbc:v1:key1:"), make([]byte, 16)...)
	stored = append(stored, kubeCBC(t, bytes.Repeat([]byte{1}, 32), []byte("hello"))...)
	got, err := set.For(secrets).FromStorage("/registry/secrets/a/b", stored)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// TestRotation: a value written with the old first key still reads once a
// new key is first, and new writes use the new key; removing the old key
// makes its values unreadable, never plaintext.
func TestRotation(t *testing.T) {
	old := mustSet(t, gcmConfig).For(secrets)
	stored, err := old.ToStorage("/registry/secrets/a/b", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	rotated := mustSet(t, `
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - secretbox:
      keys:
      - {name: key2, secret: KEY2}
  - aesgcm:
      keys:
      - {name: key1, secret: KEY1}
`).For(secrets)
	if got, err := rotated.FromStorage("/registry/secrets/a/b", stored); err != nil || string(got) != "v1" {
		t.Fatalf("old value after rotation: %q, %v", got, err)
	}
	fresh, err := rotated.ToStorage("/registry/secrets/a/b", []byte("v2"))
	if err != nil || !bytes.HasPrefix(fresh, []byte("k8s:enc:secretbox:v1:key2:")) {
		t.Fatalf("new write %q, %v", fresh, err)
	}
	identityOnly := mustSet(t, `
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - identity: {}
`).For(secrets)
	if _, err := identityOnly.FromStorage("/registry/secrets/a/b", stored); err == nil || err.Error() != "identity transformer tried to read encrypted data" {
		t.Errorf("encrypted value read by identity only: %v", err)
	}
}

// TestResources: the first entry naming a resource applies; resources no
// entry names are stored as they are.
func TestResources(t *testing.T) {
	set := mustSet(t, `
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [configmaps, "*.apps"]
  providers:
  - identity: {}
- resources: ["*."]
  providers:
  - aesgcm:
      keys:
      - {name: key1, secret: KEY1}
- resources: [flunders.wardle.example.com]
  providers:
  - secretbox:
      keys:
      - {name: key2, secret: KEY2}
`)
	for _, tc := range []struct {
		gr     meta.GroupResource
		prefix string
	}{
		{meta.GroupResource{Resource: "configmaps"}, ""},
		{meta.GroupResource{Group: "apps", Resource: "deployments"}, ""},
		{meta.GroupResource{Resource: "secrets"}, "k8s:enc:aesgcm:v1:key1:"},
		{meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"}, "k8s:enc:secretbox:v1:key2:"},
		{meta.GroupResource{Group: "wardle.example.com", Resource: "fischers"}, ""},
	} {
		out, err := set.For(tc.gr).ToStorage("/k", []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		if tc.prefix == "" && string(out) != "{}" || tc.prefix != "" && !bytes.HasPrefix(out, []byte(tc.prefix)) {
			t.Errorf("%v stored %q, want prefix %q", tc.gr, out, tc.prefix)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{`{"apiVersion":"apiserver.config.k8s.io/v1","kind":"Other"}`, `got unexpected config type: "Other", expected EncryptionConfiguration`},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - {name: k, secret: " + base64.StdEncoding.EncodeToString([]byte("short")) + "}\n",
			"resources[0].providers[0]: aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]"},
		{"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms: {name: x}\n",
			`resources[0].providers[0]: Unsupported value: "kms"`},
	} {
		_, err := encryption.Parse([]byte(tc.cfg))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse: %v, want %q", err, tc.want)
		}
	}
}

// TestReload: a changed file is the configuration from the next reload;
// an invalid one is refused and the last good one kept.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(path, []byte(config(gcmConfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := encryption.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := set.For(secrets)
	before, _ := tr.ToStorage("/k", []byte("a"))
	if changed, err := set.Reload(); changed || err != nil {
		t.Fatalf("reload of an unchanged file: %v %v", changed, err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(config(gcmConfig), "aesgcm", "secretbox", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := set.Reload(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	after, _ := tr.ToStorage("/k", []byte("a"))
	if !bytes.HasPrefix(before, []byte("k8s:enc:aesgcm:")) || !bytes.HasPrefix(after, []byte("k8s:enc:secretbox:")) {
		t.Errorf("before %q after %q", before, after)
	}
	if err := os.WriteFile(path, []byte("kind: Nonsense"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := set.Reload(); changed || err == nil {
		t.Fatalf("reload of an invalid file: %v %v", changed, err)
	}
	if again, _ := tr.ToStorage("/k", []byte("a")); !bytes.HasPrefix(again, []byte("k8s:enc:secretbox:")) {
		t.Errorf("after a bad reload %q", again)
	}
}

// TestStoredEncrypted: through Wrap, the backend holds ciphertext and the
// client reads plaintext.
func TestStoredEncrypted(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	st := encryption.Wrap(mem, mustSet(t, gcmConfig).For(secrets), "/registry")
	ctx := context.Background()
	if _, err := st.Create(ctx, "/secrets/ns/a", []byte(`{"secret":"hunter2"}`)); err != nil {
		t.Fatal(err)
	}
	raw, err := mem.Get(ctx, "/secrets/ns/a", storage.GetOptions{})
	if err != nil || bytes.Contains(raw.Value, []byte("hunter2")) || !bytes.HasPrefix(raw.Value, []byte("k8s:enc:aesgcm:v1:key1:")) {
		t.Fatalf("stored %q, %v", raw.Value, err)
	}
	got, err := st.Get(ctx, "/secrets/ns/a", storage.GetOptions{})
	if err != nil || string(got.Value) != `{"secret":"hunter2"}` {
		t.Fatalf("read %q, %v", got.Value, err)
	}
}
