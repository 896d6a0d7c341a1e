package options

import (
	"log/slog"
	"time"

	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/storage/backend"
	"github.com/apikit-dev/apikit/storage/etcd3"
)

// Storage is the storage.Factory the etcd options give a server, assembled
// by storage/backend from the flags: the one backend --storage-backend
// names, with a watch cache in front of each resource that --watch-cache
// and --watch-cache-sizes cache.
type Storage = backend.Storage

func newStorage(o *EtcdOptions, m *metrics.Registry, logger *slog.Logger) *Storage {
	return backend.New(backend.Config{
		Backend: o.Backend(),
		DataDir: o.etcdDataDir(),
		Prefix:  o.Prefix,
		Etcd: etcd3.Config{
			Endpoints: o.ServerList,
			CAFile:    o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile,
			Logger: logger,
		},
		CompactionInterval: o.CompactionInterval,
		AttemptTimeout:     flagAttemptTimeout(o.AttemptTimeout),
		MaxObjectBytes:     o.MaxObjectBytes,
		WatchCache:         o.WatchCache,
		Encryption:         o.Encryption,
		EncryptionReloadInterval: func() time.Duration {
			if o.EncryptionProviderConfigAutomaticReload {
				return o.EncryptionReloadInterval
			}
			return 0
		}(),
		Logger:  logger,
		Metrics: m,
	})
}

// flagAttemptTimeout turns --etcd-attempt-timeout into the backend's
// setting: the flag's 0 means no bound, which the backend spells negative
// (its 0 is the default).
func flagAttemptTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
