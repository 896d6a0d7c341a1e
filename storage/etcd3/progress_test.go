package etcd3

import (
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
)

func TestProgressOrderedVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		ordered bool
	}{
		{"3.4.30", false},
		{"3.4.31", true},
		{"3.4.40", true},
		{"3.5.0", false},
		{"3.5.12", false},
		{"3.5.13-rc.0", false},
		{"3.5.13", true},
		{"3.5.21", true},
		{"3.6.0-alpha.0", true},
		{"3.6.5", true},
		{"3.7.3", true},
		{"4.0.0", true},
		{"3.3.27", false},
		{"2.3.8", false},
		{"", false},
		{"3.5", false},
		{"v3.5.13", false},
		{"3.5.x", false},
	} {
		if got := progressOrderedVersion(tc.version); got != tc.ordered {
			t.Errorf("progressOrderedVersion(%q) = %v, want %v", tc.version, got, tc.ordered)
		}
	}
}

// TestProgressOrdered checks that a store learns its etcd's version (the
// test etcd is recent) and says its progress notifications can be trusted.
func TestProgressOrdered(t *testing.T) {
	s := New(newClient(t, etcdtest.Start(t)))
	defer s.Close()
	po, ok := s.(storage.ProgressOrderer)
	if !ok {
		t.Fatal("the etcd3 store does not implement storage.ProgressOrderer")
	}
	deadline := time.Now().Add(20 * time.Second)
	for !po.ProgressOrdered() {
		if time.Now().After(deadline) {
			t.Fatal("the store did not learn within 20s that its etcd orders progress notifications")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
