package secrets_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/core/secrets"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func newStore(t *testing.T) *registry.Store[*secrets.Secret] {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	st, err := secrets.New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name   string
		secret secrets.Secret
		want   string
	}{
		{"opaque", secrets.Secret{Data: map[string][]byte{"a": []byte("x")}}, ""},
		{"bad key", secrets.Secret{Data: map[string][]byte{"a b": nil}},
			`Secret "s" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"too large", secrets.Secret{Data: map[string][]byte{"a": make([]byte, 1<<20+1)}},
			`Secret "s" is invalid: data: Too long: may not be more than 1048576 bytes`},
		{"tls", secrets.Secret{Type: secrets.TypeTLS, Data: map[string][]byte{"tls.crt": nil}},
			`Secret "s" is invalid: data[tls.key]: Required value`},
		{"basic auth", secrets.Secret{Type: secrets.TypeBasicAuth},
			`Secret "s" is invalid: [data[username]: Required value, data[password]: Required value]`},
		{"basic auth password only", secrets.Secret{Type: secrets.TypeBasicAuth, Data: map[string][]byte{"password": nil}}, ""},
		{"ssh", secrets.Secret{Type: secrets.TypeSSHAuth},
			`Secret "s" is invalid: data[ssh-privatekey]: Required value`},
		{"dockerconfigjson", secrets.Secret{Type: secrets.TypeDockerConfigJSON, Data: map[string][]byte{".dockerconfigjson": []byte("{")}},
			`Secret "s" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": unexpected end of JSON input`},
		{"service account token", secrets.Secret{Type: secrets.TypeServiceAccountToken},
			`Secret "s" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value`},
		{"stringData too", secrets.Secret{StringData: map[string]string{"k/": "v"}},
			`Secret "s" is invalid: data[k/]: Invalid value: "k/": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.secret
			s.Name = "s"
			_, err := newStore(t).Create(context.Background(), "ns", &s, registry.WriteOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("create: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("create: %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestStringData: stringData is merged into data, over a key of the same
// name, and never stored; the type defaults to Opaque and may not change.
func TestStringData(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	out, err := st.Create(ctx, "ns", &secrets.Secret{ObjectMeta: meta.ObjectMeta{Name: "s"},
		Data: map[string][]byte{"a": []byte("old"), "b": []byte("kept")}, StringData: map[string]string{"a": "new"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := st.Get(ctx, "ns", "s", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*secrets.Secret{out, got} {
		if string(s.Data["a"]) != "new" || string(s.Data["b"]) != "kept" || s.StringData != nil || s.Type != secrets.TypeOpaque {
			t.Errorf("secret %+v", s)
		}
	}
	_, _, err = st.Update(ctx, "ns", "s", func(_ context.Context, cur *secrets.Secret) (*secrets.Secret, error) {
		cur.Type = secrets.TypeBasicAuth
		cur.Data["username"] = nil
		return cur, nil
	}, registry.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), `type: Invalid value: "kubernetes.io/basic-auth": field is immutable`) {
		t.Errorf("type change: %v", err)
	}
}
