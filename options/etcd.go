package options

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/backend"
	"github.com/apikit-dev/apikit/storage/embedded"
	"github.com/apikit-dev/apikit/storage/encryption"
	"github.com/apikit-dev/apikit/storage/etcd3"
)

// Storage backends --storage-backend names.
const (
	// BackendEmbedded is an etcd inside the process, with its data under
	// --data-dir: the default.
	BackendEmbedded = backend.Embedded
	// BackendEtcd3 is the etcd cluster at --etcd-servers.
	BackendEtcd3 = backend.Etcd3
	// BackendMemory keeps everything in memory, lost on exit.
	BackendMemory = backend.Memory
)

// EtcdOptions choose the storage: the backend, where etcd is, and the
// watch cache.
type EtcdOptions struct {
	// StorageBackend is embedded, etcd3 or memory; empty means etcd3 when
	// ServerList is set, embedded otherwise.
	StorageBackend string
	// DataDir holds the embedded etcd's data (in DataDir/etcd), the
	// generated certificates (DataDir/pki, see --cert-dir) and the admin
	// kubeconfig.
	DataDir string
	// ServerList are the etcd cluster's client URLs.
	ServerList []string
	// Prefix starts every key in etcd.
	Prefix string
	// CAFile, CertFile and KeyFile secure the connection to etcd.
	CAFile, CertFile, KeyFile string
	// CompactionInterval is how often etcd's history is compacted; 0
	// turns compaction off.
	CompactionInterval time.Duration
	// AttemptTimeout bounds one try of a read or write on one etcd member
	// before it is tried again on another (etcd3 backend; 0: no bound).
	AttemptTimeout time.Duration
	// EnableWatchCache turns watch caches on.
	EnableWatchCache bool
	// WatchCacheSizes are resource[.group]#size entries; Complete merges
	// DefaultWatchCacheSizes into them and writes them back.
	WatchCacheSizes []string
	// DefaultWatchCacheSizes are the program's own sizes, which the flag
	// overrides entry by entry. Not a flag.
	DefaultWatchCacheSizes map[meta.GroupResource]int
	// MaxObjectBytes is the size limit of a stored object on every backend
	// (storage.DefaultMaxObjectBytes, what etcd's default request limit
	// holds); larger writes get 413. The embedded etcd is set to hold it;
	// an external etcd needs its --max-request-bytes raised to hold more.
	MaxObjectBytes int64
	// EncryptionProviderConfigFile is an EncryptionConfiguration: how the
	// values of the resources it names are encrypted in storage.
	EncryptionProviderConfigFile string
	// EncryptionProviderConfigAutomaticReload reads the file again while
	// the server runs (every EncryptionReloadInterval).
	EncryptionProviderConfigAutomaticReload bool
	// EncryptionReloadInterval is how often the file is read again; not a
	// flag (kube-apiserver: one minute).
	EncryptionReloadInterval time.Duration

	// Set by Complete.

	// Encryption is the loaded EncryptionProviderConfigFile, nil without.
	Encryption *encryption.Set

	// WatchCache is the parsed watch cache configuration.
	WatchCache storage.WatchCacheConfig
	// Storage is the backend the flags name, not opened yet; ApplyTo makes
	// it the server's storage.Factory.
	Storage *Storage
}

// DefaultEtcdAttemptTimeout is --etcd-attempt-timeout's default, the
// storage backend's own (see docs/failover.md).
const DefaultEtcdAttemptTimeout = etcd3.DefaultAttemptTimeout

// NewEtcdOptions returns kube-apiserver's defaults, with the embedded
// backend.
func NewEtcdOptions() *EtcdOptions {
	return &EtcdOptions{
		Prefix:             "/registry",
		CompactionInterval: 5 * time.Minute,
		AttemptTimeout:     DefaultEtcdAttemptTimeout,
		EnableWatchCache:   true,
		MaxObjectBytes:     storage.DefaultMaxObjectBytes,
		// kube-apiserver reads the file again once a minute.
		EncryptionReloadInterval: time.Minute,
	}
}

// AddFlags adds the storage flags.
func (o *EtcdOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.StorageBackend, "storage-backend", o.StorageBackend,
		"The storage backend for persistence: 'embedded' (an etcd inside the process, data under --data-dir), 'etcd3' (the etcd cluster at --etcd-servers) "+
			"or 'memory' (lost on exit). If blank, etcd3 when --etcd-servers is given, else embedded.")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"The directory of the embedded etcd's data (<data-dir>/etcd), the generated certificates (<data-dir>/pki) and the admin kubeconfig.")
	fs.StringSliceVar(&o.ServerList, "etcd-servers", o.ServerList,
		"List of etcd servers to connect with (scheme://ip:port), comma separated.")
	fs.StringVar(&o.Prefix, "etcd-prefix", o.Prefix,
		"The prefix to prepend to all resource paths in etcd.")
	fs.StringVar(&o.CAFile, "etcd-cafile", o.CAFile,
		"SSL Certificate Authority file used to secure etcd communication.")
	fs.StringVar(&o.CertFile, "etcd-certfile", o.CertFile,
		"SSL certification file used to secure etcd communication.")
	fs.StringVar(&o.KeyFile, "etcd-keyfile", o.KeyFile,
		"SSL key file used to secure etcd communication.")
	fs.DurationVar(&o.CompactionInterval, "etcd-compaction-interval", o.CompactionInterval,
		"The interval of compaction requests. If 0, the compaction request from apiserver is disabled.")
	fs.DurationVar(&o.AttemptTimeout, "etcd-attempt-timeout", o.AttemptTimeout,
		"How long one read or write may wait for one etcd member before it is tried again on another member. "+
			"0 waits as long as the request allows.")
	fs.Int64Var(&o.MaxObjectBytes, "storage-max-object-bytes", o.MaxObjectBytes,
		"The size limit in bytes of a stored object, on every storage backend; larger writes are refused with 413. "+
			"The default is what etcd's default --max-request-bytes holds; the embedded etcd is set to hold the limit, an external etcd must allow "+
			"requests of the limit plus 8 KiB.")
	fs.StringVar(&o.EncryptionProviderConfigFile, "encryption-provider-config", o.EncryptionProviderConfigFile,
		"The file containing configuration for encryption providers to be used for storing secrets in etcd")
	fs.BoolVar(&o.EncryptionProviderConfigAutomaticReload, "encryption-provider-config-automatic-reload", o.EncryptionProviderConfigAutomaticReload,
		"Determines if the file set by --encryption-provider-config should be automatically reloaded if the disk contents change.")
	fs.BoolVar(&o.EnableWatchCache, "watch-cache", o.EnableWatchCache,
		"Enable watch caching in the apiserver")
	fs.StringSliceVar(&o.WatchCacheSizes, "watch-cache-sizes", o.WatchCacheSizes,
		"Watch cache size settings for some resources, comma separated. The individual setting format: resource[.group]#size, "+
			"where resource is lowercase plural (no version), group is omitted for resources of apiVersion v1 (the legacy core API) and included for others, "+
			"and size is a number. A size of 0 disables watch caching for that resource. Only consulted if the watch cache is enabled.")
}

// Backend returns the backend in use: StorageBackend, or its default.
func (o *EtcdOptions) Backend() string {
	if o.StorageBackend != "" {
		return o.StorageBackend
	}
	if len(o.ServerList) > 0 {
		return BackendEtcd3
	}
	return BackendEmbedded
}

// Validate checks the backend and what it needs, and the watch cache
// sizes.
func (o *EtcdOptions) Validate() []error {
	var errs []error
	switch b := o.Backend(); b {
	case BackendEtcd3:
		if len(o.ServerList) == 0 {
			errs = append(errs, fmt.Errorf("--etcd-servers must be specified"))
		}
	case BackendEmbedded, BackendMemory:
		if len(o.ServerList) > 0 {
			errs = append(errs, fmt.Errorf("--etcd-servers cannot be used with --storage-backend=%s", b))
		}
		if b == BackendEmbedded && !embedded.Built {
			errs = append(errs, fmt.Errorf("--storage-backend=embedded: this binary was built with -tags apikit_noembed, without the embedded etcd; give --etcd-servers, or --storage-backend=memory"))
		}
		if b == BackendEmbedded && o.DataDir == "" {
			errs = append(errs, fmt.Errorf("--data-dir must be specified with --storage-backend=embedded"))
		}
	default:
		errs = append(errs, fmt.Errorf("--storage-backend invalid, allowed values: %s, %s, %s. If not specified, it will default to '%s', or '%s' when --etcd-servers is given",
			BackendEmbedded, BackendEtcd3, BackendMemory, BackendEmbedded, BackendEtcd3))
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, fmt.Errorf("--etcd-certfile and --etcd-keyfile must be given together"))
	}
	if o.CompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("--etcd-compaction-interval can not be negative value"))
	}
	if o.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("--etcd-attempt-timeout can not be negative value"))
	}
	if o.MaxObjectBytes <= 0 {
		errs = append(errs, fmt.Errorf("--storage-max-object-bytes must be positive"))
	}
	if _, err := ParseWatchCacheSizes(o.WatchCacheSizes); err != nil {
		errs = append(errs, err)
	}
	if o.EncryptionProviderConfigAutomaticReload && o.EncryptionProviderConfigFile == "" {
		errs = append(errs, fmt.Errorf("--encryption-provider-config-automatic-reload must be set with --encryption-provider-config"))
	}
	return errs
}

// CompleteEncryption loads --encryption-provider-config, so that a bad
// file stops the server before it starts.
func (o *EtcdOptions) CompleteEncryption() error {
	o.Encryption = nil
	if o.EncryptionProviderConfigFile == "" {
		return nil
	}
	set, err := encryption.Load(o.EncryptionProviderConfigFile)
	if err != nil {
		return fmt.Errorf("--encryption-provider-config: %w", err)
	}
	o.Encryption = set
	return nil
}

// CompleteWatchCache merges DefaultWatchCacheSizes with the
// --watch-cache-sizes entries (which win), writes the result back to
// WatchCacheSizes and sets WatchCache.
func (o *EtcdOptions) CompleteWatchCache() error {
	o.WatchCache = storage.WatchCacheConfig{Enabled: o.EnableWatchCache}
	if !o.EnableWatchCache {
		return nil
	}
	sizes := make(map[meta.GroupResource]int, len(o.DefaultWatchCacheSizes))
	for r, s := range o.DefaultWatchCacheSizes {
		sizes[r] = s
	}
	user, err := ParseWatchCacheSizes(o.WatchCacheSizes)
	if err != nil {
		return err
	}
	for r, s := range user {
		sizes[r] = s
	}
	if o.WatchCacheSizes, err = WriteWatchCacheSizes(sizes); err != nil {
		return err
	}
	o.WatchCache.Sizes = sizes
	return nil
}

// etcdDataDir is where the embedded etcd keeps its data.
func (o *EtcdOptions) etcdDataDir() string { return filepath.Join(o.DataDir, "etcd") }

// ApplyTo sets the server's storage (the backend the flags name, opened on
// first use) with a readiness check on it, and the watch cache
// configuration.
func (o *EtcdOptions) ApplyTo(c *server.Config) error {
	if o.Storage == nil {
		return fmt.Errorf("etcd options: ApplyTo before Complete")
	}
	c.Storage = o.Storage
	// Patches are bounded by the limit the backend stores.
	c.MaxObjectBytes = o.MaxObjectBytes
	if o.Backend() != BackendMemory {
		c.ReadyzChecks = append(c.ReadyzChecks, server.HealthCheck{Name: "etcd", Check: o.Storage.Check})
	}
	return nil
}
