package storage_test

import (
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

func TestKeyLayout(t *testing.T) {
	flunders := meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"}
	pods := meta.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"group root", storage.KeyRoot(flunders), "/wardle.example.com/flunders"},
		{"core root", storage.KeyRoot(pods), "/pods"},
		{"namespaced key", storage.Key("/pods", "ns", "a"), "/pods/ns/a"},
		{"cluster-scoped key", storage.Key("/wardle.example.com/fischers", "", "a"), "/wardle.example.com/fischers/a"},
		{"namespace prefix", storage.KeyPrefix("/pods", "ns"), "/pods/ns/"},
		{"all prefix", storage.KeyPrefix("/pods", ""), "/pods/"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
