package backend_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/core/secrets"
	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/backend"
	"github.com/apikit-dev/apikit/storage/encryption"
	"github.com/apikit-dev/apikit/storage/etcd3"
)

func encryptionConfig(providers string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
}

func keyYAML(provider, name string, b byte) string {
	return "  - " + provider + ":\n      keys:\n      - name: " + name + "\n        secret: " +
		base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) + "\n"
}

// TestEncryptionAtRest: secrets written through a server's storage
// (etcd, a watch cache in front) are ciphertext in etcd, read straight from
// it, with kube-apiserver's prefix; they read back through the cache; after
// the file rotates keys (a new first key, the old one still listed) and is
// reloaded, old and new secrets read and new writes use the new key.
func TestEncryptionAtRest(t *testing.T) {
	endpoints := etcdtest.Start(t)
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(encryptionConfig(keyYAML("aescbc", "key1", 1)+"  - identity: {}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := encryption.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st := backend.New(backend.Config{Backend: backend.Etcd3, Prefix: "/registry", Etcd: etcd3.Config{Endpoints: endpoints},
		WatchCache: storage.WatchCacheConfig{Enabled: true}, Encryption: set, EncryptionReloadInterval: 50 * time.Millisecond})
	t.Cleanup(func() { _ = st.Close() })
	store, err := secrets.New(st)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	create := func(name, value string) {
		t.Helper()
		if _, err := store.Create(ctx, "ns", &secrets.Secret{ObjectMeta: meta.ObjectMeta{Name: name},
			StringData: map[string]string{"password": value}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("old", "hunter2-old")

	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	raw := func(name string) []byte {
		t.Helper()
		resp, err := client.Get(ctx, "/registry/secrets/ns/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("etcd get %s: %v %v", name, err, resp)
		}
		return resp.Kvs[0].Value
	}
	b64 := base64.StdEncoding.EncodeToString
	if v := raw("old"); !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) || bytes.Contains(v, []byte(b64([]byte("hunter2-old")))) || bytes.Contains(v, []byte(`"kind"`)) {
		t.Fatalf("etcd holds %q", v)
	}
	read := func(name, want string) {
		t.Helper()
		s, _, err := store.Get(ctx, "ns", name, meta.GetOptions{})
		if err != nil || string(s.Data["password"]) != want {
			t.Fatalf("get %s: %v %+v", name, err, s)
		}
	}
	read("old", "hunter2-old")

	// Rotation: secretbox key2 first, aescbc key1 still there to read.
	if err := os.WriteFile(path, []byte(encryptionConfig(keyYAML("secretbox", "key2", 2)+keyYAML("aescbc", "key1", 1))), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		probe := fmt.Sprintf("probe-%d", i)
		create(probe, "x")
		if bytes.HasPrefix(raw(probe), []byte("k8s:enc:secretbox:v1:key2:")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rotated configuration was not reloaded")
		}
		time.Sleep(100 * time.Millisecond)
	}
	create("new", "hunter2-new")
	if v := raw("new"); !bytes.HasPrefix(v, []byte("k8s:enc:secretbox:v1:key2:")) || bytes.Contains(v, []byte(b64([]byte("hunter2-new")))) {
		t.Fatalf("etcd holds %q", v)
	}
	read("old", "hunter2-old")
	read("new", "hunter2-new")
	list, err := store.List(ctx, "ns", meta.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list.Items {
		names = append(names, e.Object.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "new") || !strings.Contains(got, "old") {
		t.Errorf("list: %s", got)
	}
}
