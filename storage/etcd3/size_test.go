package etcd3

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/internal/etcdtest"
	"github.com/apikit-dev/apikit/storage"
)

// TestObjectsEtcdRefuses: when the store's limit is above what etcd (or the
// client) accepts, the refusal is ErrTooLarge, a client's mistake, not
// ErrUnavailable, and its message names no key.
func TestObjectsEtcdRefuses(t *testing.T) {
	client := newClient(t, etcdtest.Start(t))
	s := New(client, WithPrefix("/registry-size"), WithMaxObjectBytes(8<<20))
	t.Cleanup(func() { s.Close() })
	for _, tc := range []struct {
		name string
		size int
	}{
		// Over etcd's default --max-request-bytes (1.5 MiB).
		{"etcd's request limit", 1600 << 10},
		// Over the client's default send limit (2 MiB) too.
		{"the client's send limit", 5 << 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			value := bytes.Repeat([]byte("x"), tc.size)
			_, err := s.Create(ctx, "/big/a", value)
			checkTooLarge(t, "Create", err)
			if _, err := s.Create(ctx, "/big/a", []byte("small")); err != nil {
				t.Fatal(err)
			}
			_, err = s.GuaranteedUpdate(ctx, "/big/a", storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) { return value, nil })
			checkTooLarge(t, "GuaranteedUpdate", err)
			if _, err := s.Delete(ctx, "/big/a", storage.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func checkTooLarge(t *testing.T, what string, err error) {
	t.Helper()
	var se *storage.Error
	if !errors.Is(err, storage.ErrTooLarge) || !errors.As(err, &se) {
		t.Fatalf("%s: %v, want ErrTooLarge", what, err)
	}
	if se.Limit != 0 || strings.Contains(se.Message, "/big") || se.Message == "" {
		t.Errorf("%s: limit %d, message %q; want no limit (etcd's is unknown) and a message without the key", what, se.Limit, se.Message)
	}
}
