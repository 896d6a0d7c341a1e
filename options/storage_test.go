package options

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
)

// TestStorageWatchCache checks which resources the storage puts a watch
// cache in front of, as --watch-cache and --watch-cache-sizes say, and
// that Close stops the caches.
func TestStorageWatchCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd process")
	}
	endpoints := etcdtest.Start(t)
	widgets := meta.GroupResource{Group: "test.example.com", Resource: "widgets"}
	gadgets := meta.GroupResource{Group: "test.example.com", Resource: "gadgets"}
	for _, tc := range []struct {
		name   string
		args   []string
		cached map[meta.GroupResource]bool
	}{
		{"default: every resource", []string{"--etcd-servers=" + endpoints[0]},
			map[meta.GroupResource]bool{widgets: true, gadgets: true, {Group: "test.example.com"}: false}},
		{"a size of 0 turns one off", []string{"--etcd-servers=" + endpoints[0], "--watch-cache-sizes=gadgets.test.example.com#0"},
			map[meta.GroupResource]bool{widgets: true, gadgets: false}},
		{"--watch-cache=false", []string{"--etcd-servers=" + endpoints[0], "--watch-cache=false"},
			map[meta.GroupResource]bool{widgets: false, gadgets: false}},
		{"the memory backend has none", []string{"--storage-backend=memory"},
			map[meta.GroupResource]bool{widgets: false, gadgets: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, tc.args...)
			if err := o.Etcd.CompleteWatchCache(); err != nil {
				t.Fatal(err)
			}
			st := newStorage(o.Etcd, nil, o.Logger)
			var caches []*cacher.Cacher
			for r, want := range tc.cached {
				s, err := st.For(r)
				if err != nil {
					t.Fatalf("For(%v): %v", r, err)
				}
				c, ok := s.(*cacher.Cacher)
				if ok != want {
					t.Fatalf("For(%v) = %T; want a cache: %v", r, s, want)
				}
				if ok {
					if c.Prefix() != storage.KeyRoot(r)+"/" {
						t.Fatalf("the cache of %v holds %q", r, c.Prefix())
					}
					caches = append(caches, c)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for _, c := range caches {
				if _, err := c.Get(context.Background(), c.Prefix()+"x", storage.GetOptions{}); !errors.Is(err, storage.ErrUnavailable) {
					t.Fatalf("a cache still serves after Close: %v", err)
				}
			}
		})
	}
}

// TestStorageMaxObjectBytes checks that --storage-max-object-bytes is the
// object size limit of every backend, and that the default is
// storage.DefaultMaxObjectBytes.
func TestStorageMaxObjectBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	endpoints := etcdtest.Start(t)
	for _, tc := range []struct {
		name  string
		args  []string
		limit int64
	}{
		{"memory, default", []string{"--storage-backend=memory"}, storage.DefaultMaxObjectBytes},
		{"memory", []string{"--storage-backend=memory", "--storage-max-object-bytes=2048"}, 2048},
		{"embedded", []string{"--storage-backend=embedded", "--storage-max-object-bytes=2048"}, 2048},
		{"etcd3", []string{"--etcd-servers=" + endpoints[0], "--etcd-prefix=/max-object", "--storage-max-object-bytes=2048"}, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, tc.args...)
			st := newStorage(o.Etcd, nil, o.Logger)
			t.Cleanup(func() { st.Close() })
			s, err := st.For(meta.GroupResource{Group: "test.example.com", Resource: "widgets"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, err = s.Create(ctx, "/test.example.com/widgets/big", make([]byte, tc.limit+1))
			var se *storage.Error
			if !errors.As(err, &se) || se.Code != storage.CodeTooLarge || se.Limit != tc.limit {
				t.Fatalf("Create of %d bytes: %v, want ErrTooLarge naming limit %d", tc.limit+1, err, tc.limit)
			}
			if _, err := s.Create(ctx, "/test.example.com/widgets/fits", make([]byte, tc.limit)); err != nil {
				t.Fatalf("Create of %d bytes: %v", tc.limit, err)
			}
		})
	}
}

func TestFlagAttemptTimeout(t *testing.T) {
	for flag, want := range map[time.Duration]time.Duration{0: -1, time.Second: time.Second, 250 * time.Millisecond: 250 * time.Millisecond} {
		if got := flagAttemptTimeout(flag); got != want {
			t.Errorf("--etcd-attempt-timeout=%v gives the backend %v, want %v", flag, got, want)
		}
	}
}

// TestEncryptionFlags: --encryption-provider-config is loaded by Complete's
// step (a bad file stops the server), the storage encrypts with it, and
// --encryption-provider-config-automatic-reload needs the file.
func TestEncryptionFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n      - {name: k, secret: " +
		base64.StdEncoding.EncodeToString(make([]byte, 32)) + "}\n"
	if err := os.WriteFile(good, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("kind: Nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, _ := newTestOptions(t, "--storage-backend=memory", "--encryption-provider-config="+bad)
	if err := o.Etcd.CompleteEncryption(); err == nil || !strings.Contains(err.Error(), `--encryption-provider-config: `+bad+`: got unexpected config type: "Nope", expected EncryptionConfiguration`) {
		t.Errorf("bad file: %v", err)
	}
	o, _ = newTestOptions(t, "--storage-backend=memory", "--encryption-provider-config-automatic-reload")
	if errs := o.Etcd.Validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "--encryption-provider-config-automatic-reload must be set with --encryption-provider-config") {
		t.Errorf("reload without a file: %v", errs)
	}
	o, _ = newTestOptions(t, "--storage-backend=memory", "--encryption-provider-config="+good, "--encryption-provider-config-automatic-reload")
	if err := o.Etcd.CompleteEncryption(); err != nil {
		t.Fatal(err)
	}
	st := newStorage(o.Etcd, nil, o.Logger)
	defer st.Close()
	secrets := meta.GroupResource{Resource: "secrets"}
	s, err := st.For(secrets)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Create(ctx, "/secrets/ns/a", []byte(`{"v":"plain"}`)); err != nil {
		t.Fatal(err)
	}
	if kv, err := s.Get(ctx, "/secrets/ns/a", storage.GetOptions{}); err != nil || string(kv.Value) != `{"v":"plain"}` {
		t.Fatalf("read back %q, %v", kv.Value, err)
	}
	// Another resource's view of the same memory backend (identity, as
	// no entry names configmaps) finds encrypted bytes there, and refuses
	// them as kube-apiserver's identity provider does.
	cms, err := st.For(meta.GroupResource{Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "/secrets/ns/a", storage.GetOptions{}); err == nil || !strings.Contains(err.Error(), "identity transformer tried to read encrypted data") {
		t.Errorf("the stored value read as plaintext: %v", err)
	}
}
