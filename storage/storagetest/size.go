package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/storage"
)

// sizedValue returns a JSON object of exactly n bytes named name.
func sizedValue(t testing.TB, name string, n int64) []byte {
	t.Helper()
	head := fmt.Sprintf(`{"metadata":{"name":%q},"pad":"`, name)
	const tail = `"}`
	pad := n - int64(len(head)+len(tail))
	if pad < 0 {
		t.Fatalf("no %d-byte value can hold name %q", n, name)
	}
	return []byte(head + strings.Repeat("x", int(pad)) + tail)
}

// wantTooLarge checks that err is ErrTooLarge naming limit.
func wantTooLarge(t testing.TB, what string, err error, limit int64) {
	t.Helper()
	wantCode(t, what, err, storage.ErrTooLarge)
	var se *storage.Error
	if !errors.As(err, &se) || se.Limit != limit {
		t.Fatalf("%s: %v names limit %d, want %d", what, err, se.Limit, limit)
	}
}

// testObjectSize checks the object size limit: a value of exactly the limit
// is stored, under a key as long as a real one can be (etcd counts the key
// in its request limit), and one byte more is refused by Create and
// GuaranteedUpdate alike, with nothing written.
func testObjectSize(t *testing.T, f Factory) {
	limit := f.MaxObjectBytes
	if limit == 0 {
		limit = storage.DefaultMaxObjectBytes
	}
	// The longest key kube-style paths give: group, resource, namespace
	// and name at their longest.
	key := "/size/" + strings.Repeat("g", 253) + "/" + strings.Repeat("r", 63) + "/" + strings.Repeat("n", 63) + "/"
	name := strings.Repeat("a", 253)

	t.Run("Create", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		before := currentRevision(t, ctx, s)
		_, err := s.Create(ctx, key+"big", sizedValue(t, "big", limit+1))
		wantTooLarge(t, "Create over the limit", err, limit)
		if after := currentRevision(t, ctx, s); after != before {
			t.Fatalf("a refused Create moved the store from revision %d to %d", before, after)
		}
		_, err = s.Get(ctx, key+"big", storage.GetOptions{})
		wantCode(t, "Get after a refused Create", err, storage.ErrNotFound)

		v := sizedValue(t, name, limit)
		if _, err := s.Create(ctx, key+name, v); err != nil {
			t.Fatalf("Create of a value at the limit (%d bytes): %v", limit, err)
		}
		if got := mustGet(t, ctx, s, key+name); !bytes.Equal(got.Value, v) {
			t.Fatalf("Get returned %d bytes, want the %d stored", len(got.Value), len(v))
		}
	})
	t.Run("GuaranteedUpdate", func(t *testing.T) {
		s, ctx := newStore(t, f), testContext(t)
		small := value("a", 1)
		rev := mustCreate(t, ctx, s, key+name, small)
		_, err := s.GuaranteedUpdate(ctx, key+name, storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) {
			return sizedValue(t, name, limit+1), nil
		})
		wantTooLarge(t, "GuaranteedUpdate over the limit", err, limit)
		sameKV(t, "Get after a refused update", mustGet(t, ctx, s, key+name), key+name, small, rev)

		_, err = s.GuaranteedUpdate(ctx, key+"new", storage.UpdateOptions{IgnoreNotFound: true}, func(storage.KeyValue) ([]byte, error) {
			return sizedValue(t, "new", limit+1), nil
		})
		wantTooLarge(t, "GuaranteedUpdate creating over the limit", err, limit)

		v := sizedValue(t, name, limit)
		kv, err := s.GuaranteedUpdate(ctx, key+name, storage.UpdateOptions{}, func(storage.KeyValue) ([]byte, error) {
			return v, nil
		})
		if err != nil {
			t.Fatalf("GuaranteedUpdate to a value at the limit (%d bytes): %v", limit, err)
		}
		if got := mustGet(t, ctx, s, key+name); !bytes.Equal(got.Value, v) || got.Revision != kv.Revision {
			t.Fatalf("Get returned %d bytes at revision %d, want the %d stored at %d", len(got.Value), got.Revision, len(v), kv.Revision)
		}
	})
}
