package configmaps_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func newStore(t *testing.T) *registry.Store[*configmaps.ConfigMap] {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	st, err := configmaps.New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestValidation(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		cm   configmaps.ConfigMap
		want string // the Status message; "" accepts
	}{
		{"ok", configmaps.ConfigMap{Data: map[string]string{"a.b": "x"}, BinaryData: map[string][]byte{"c": {1}}}, ""},
		{"bad key", configmaps.ConfigMap{Data: map[string]string{"a/b": "x"}},
			`ConfigMap "c" is invalid: data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"dot dot", configmaps.ConfigMap{BinaryData: map[string][]byte{"..": nil}},
			`ConfigMap "c" is invalid: binaryData[..]: Invalid value: "..": must not be '..'`},
		{"duplicate", configmaps.ConfigMap{Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": {1}}},
			`ConfigMap "c" is invalid: data[k]: Invalid value: "k": duplicate of key present in binaryData`},
		{"too large", configmaps.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", 600<<10)}, BinaryData: map[string][]byte{"b": make([]byte, 600<<10)}},
			`ConfigMap "c" is invalid: []: Too long: may not be more than 1048576 bytes`},
		{"immutable ok", configmaps.ConfigMap{Immutable: &yes}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			cm := tt.cm
			cm.Name = "c"
			_, err := st.Create(context.Background(), "ns", &cm, registry.WriteOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("create: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("create: %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestImmutable(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	yes := true
	if _, err := st.Create(ctx, "ns", &configmaps.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "c"}, Immutable: &yes, Data: map[string]string{"a": "1"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, err := st.Update(ctx, "ns", "c", func(_ context.Context, cur *configmaps.ConfigMap) (*configmaps.ConfigMap, error) {
		cur.Data = map[string]string{"a": "2"}
		cur.Immutable = nil
		return cur, nil
	}, registry.UpdateOptions{})
	want := "ConfigMap \"c\" is invalid: [immutable: Forbidden: field is immutable when `immutable` is set, data: Forbidden: field is immutable when `immutable` is set]"
	if err == nil || err.Error() != want {
		t.Fatalf("update of an immutable configmap: %v\nwant %s", err, want)
	}
	// Metadata may still change.
	if _, _, err := st.Update(ctx, "ns", "c", func(_ context.Context, cur *configmaps.ConfigMap) (*configmaps.ConfigMap, error) {
		cur.Labels = map[string]string{"x": "y"}
		return cur, nil
	}, registry.UpdateOptions{}); err != nil {
		t.Fatalf("label change of an immutable configmap: %v", err)
	}
}
