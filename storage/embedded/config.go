package embedded

import (
	"errors"
	"log/slog"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

// ErrNotBuilt is what Start returns in a binary built with -tags
// apikit_noembed, which links no etcd server: such a binary stores its
// objects in an etcd cluster (storage/etcd3) or in memory.
var ErrNotBuilt = errors.New("embedded: this binary was built with -tags apikit_noembed, without the embedded etcd")

// DefaultCompactionRetention is how much history etcd keeps, as
// kube-apiserver's default --etcd-compaction-interval.
const DefaultCompactionRetention = 5 * time.Minute

// Config configures an embedded etcd.
type Config struct {
	// DataDir holds etcd's data. It is created if missing and reused on
	// the next Start. Required.
	DataDir string
	// Name is the member's name; default "apikit". It is part of the
	// member's identity: keep it across restarts.
	Name string
	// ClientURL, when set, also serves etcd's client API there, for tools
	// like etcdctl: "http://127.0.0.1:2379". Empty keeps etcd in-process
	// only.
	ClientURL string
	// CompactionRetention is how much history etcd's periodic compactor
	// keeps; zero means DefaultCompactionRetention, negative disables
	// compaction.
	CompactionRetention time.Duration
	// QuotaBackendBytes caps etcd's database size; zero means etcd's
	// default (2 GiB).
	QuotaBackendBytes int64
	// Logger receives etcd's logs at or above LogLevel. Nil means
	// slog.Default(); a nil LogLevel means slog.LevelError, since etcd is
	// chatty and its warnings about a single-node setup are expected here.
	Logger   *slog.Logger
	LogLevel slog.Leveler
	// MaxObjectBytes is the size limit of a stored object; zero means
	// storage.DefaultMaxObjectBytes. etcd's request limit is raised to hold
	// it, and the stores Storage returns refuse larger objects with
	// storage.ErrTooLarge.
	MaxObjectBytes int64
	// UnsafeNoFsync skips fsync: acknowledged writes can be lost on a
	// crash. Only for tests whose data is thrown away.
	UnsafeNoFsync bool
}

func maxObjectBytes(cfg Config) int64 {
	if cfg.MaxObjectBytes > 0 {
		return cfg.MaxObjectBytes
	}
	return storage.DefaultMaxObjectBytes
}
