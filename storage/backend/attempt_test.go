package backend

import (
	"testing"
	"time"

	"github.com/apikit-dev/apikit/storage/etcd3"
)

// A program that fills a Config without flags gets the same bound on one
// etcd try as the --etcd-attempt-timeout flag's default.
func TestAttemptTimeoutDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Duration
		want time.Duration
	}{
		{"unset is the default", 0, etcd3.DefaultAttemptTimeout},
		{"set is kept", 3 * time.Second, 3 * time.Second},
		{"negative is no bound, passed on", -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(Config{Backend: Etcd3, AttemptTimeout: tc.in}).attemptTimeout; got != tc.want {
				t.Errorf("attempt timeout %v, want %v", got, tc.want)
			}
		})
	}
}
