package encryption_test

import (
	"context"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/encryption"
	"github.com/apikit-dev/apikit/storage/memory"
	"github.com/apikit-dev/apikit/storage/storagetest"
)

const bookmarkInterval = 200 * time.Millisecond

// closing closes the backend a wrapped store shares, as the storage
// assembly would, when the suite closes the store.
type closing struct {
	storage.Interface
	backend *memory.Store
}

func (c closing) Close() error { return c.backend.Close() }

// TestConformance: a store whose every value is encrypted (AES-GCM) passes
// the suite every backend passes, selectors, watches and preconditions
// included.
func TestConformance(t *testing.T) {
	set := mustSet(t, gcmConfig)
	wrap := func(m *memory.Store) storage.Interface {
		return closing{encryption.Wrap(m, set.For(meta.GroupResource{Resource: "secrets"}), "/registry"), m}
	}
	storagetest.Run(t, storagetest.Factory{
		New: func(*testing.T) storage.Interface {
			return wrap(memory.New(memory.WithBookmarkInterval(bookmarkInterval), memory.WithMaxRevisionWait(time.Second)))
		},
		Compact: func(_ context.Context, s storage.Interface, rev int64) error {
			return s.(closing).backend.Compact(rev)
		},
		BookmarkInterval: bookmarkInterval,
		// Encryption adds its prefix (23 bytes), a nonce (12) and a tag
		// (16) to every value, which the backend's limit counts.
		MaxObjectBytes: storage.DefaultMaxObjectBytes - 51,
	})
}
