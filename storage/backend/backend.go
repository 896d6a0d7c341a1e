// Package backend assembles a server's storage: the one backend a
// configuration names (an embedded etcd, an etcd cluster, or memory),
// shared by every resource (their keys keep them apart), with a watch
// cache (storage/cacher) in front of each resource the configuration
// caches. The options package fills a Config from kube-apiserver's flags;
// a program without flags fills one itself.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/cacher"
	"github.com/apikit-dev/apikit/storage/embedded"
	"github.com/apikit-dev/apikit/storage/encryption"
	"github.com/apikit-dev/apikit/storage/etcd3"
	"github.com/apikit-dev/apikit/storage/memory"
)

// The backends.
const (
	// Embedded is an etcd inside the process, with its data in DataDir.
	Embedded = "embedded"
	// Etcd3 is the etcd cluster Etcd names.
	Etcd3 = "etcd3"
	// Memory keeps everything in memory, lost on exit.
	Memory = "memory"
)

// Config says which backend to open and how.
type Config struct {
	// Backend is Embedded, Etcd3 or Memory.
	Backend string
	// DataDir holds the embedded etcd's data.
	DataDir string
	// Prefix is put before every key in etcd (kube-apiserver's /registry).
	Prefix string
	// Etcd is how to reach the Etcd3 backend.
	Etcd etcd3.Config
	// CompactionInterval is how often etcd's history is compacted; 0 never.
	CompactionInterval time.Duration
	// AttemptTimeout bounds one try of an etcd read or write on one member
	// before it is tried again on another; 0 is etcd3.DefaultAttemptTimeout,
	// a negative value no bound but the request's own.
	AttemptTimeout time.Duration
	// MaxObjectBytes bounds a stored value.
	MaxObjectBytes int64
	// WatchCache says which resources get a watch cache, and how large.
	WatchCache storage.WatchCacheConfig
	// Encryption, when set, encrypts the values of the resources its
	// configuration names (--encryption-provider-config): between each
	// resource's watch cache and the backend, so the cache holds plaintext
	// and etcd ciphertext.
	Encryption *encryption.Set
	// EncryptionReloadInterval, when positive, is how often Encryption's
	// file is read again (--encryption-provider-config-automatic-reload).
	EncryptionReloadInterval time.Duration
	// Logger receives the backend's logs; nil is slog.Default().
	Logger *slog.Logger
	// Metrics, when set, records every resource's requests to the backend
	// (etcd_request_duration_seconds and its kin): the server's registry.
	Metrics *metrics.Registry
}

// Storage is the storage.Factory of a Config: the backend, shared by every
// resource, with a watch cache in front of each resource the configuration
// caches. It is opened by Open, or on first use; Close releases it, after
// the server has stopped.
//
// The memory backend gets no cache: it already serves every read from
// memory, consistently and with a memo per value, and a cache would add a
// copy of its index and a wait for its own watch to every consistent read
// (see docs/benchmarks.md).
type Storage struct {
	backend            string
	dataDir            string
	prefix             string
	etcd               etcd3.Config
	compactionInterval time.Duration
	attemptTimeout     time.Duration
	maxObjectBytes     int64
	watchCache         storage.WatchCacheConfig
	encryption         *encryption.Set
	encryptionReload   time.Duration
	logger             *slog.Logger
	metrics            *metrics.Registry

	mu      sync.Mutex
	store   storage.Interface
	caches  *cacher.Factory // nil without watch caches
	closers []func() error
	closed  bool
}

// New returns the Storage of c; nothing is opened yet.
func New(c Config) *Storage {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = etcd3.DefaultAttemptTimeout
	}
	return &Storage{
		backend:            c.Backend,
		dataDir:            c.DataDir,
		prefix:             c.Prefix,
		etcd:               c.Etcd,
		compactionInterval: c.CompactionInterval,
		attemptTimeout:     c.AttemptTimeout,
		maxObjectBytes:     c.MaxObjectBytes,
		watchCache:         c.WatchCache,
		encryption:         c.Encryption,
		encryptionReload:   c.EncryptionReloadInterval,
		logger:             c.Logger,
		metrics:            c.Metrics,
	}
}

// Backend names the backend: embedded, etcd3 or memory.
func (s *Storage) Backend() string { return s.backend }

// Open starts or connects to the backend, unless it is open already.
func (s *Storage) Open(ctx context.Context) error {
	_, err := s.open(ctx)
	return err
}

func (s *Storage) open(ctx context.Context) (storage.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("storage is closed")
	}
	if s.store != nil {
		return s.store, nil
	}
	switch s.backend {
	case Memory:
		m := memory.New(memory.WithMaxObjectBytes(s.maxObjectBytes))
		s.store, s.closers = m, []func() error{m.Close}
	case Embedded:
		retention := s.compactionInterval
		if retention == 0 {
			retention = -1 // the flag's 0 turns compaction off
		}
		e, err := embedded.Start(ctx, embedded.Config{DataDir: s.dataDir, CompactionRetention: retention, MaxObjectBytes: s.maxObjectBytes, Logger: s.logger})
		if err != nil {
			return nil, err
		}
		st := e.Storage(etcd3.WithPrefix(s.prefix))
		s.store, s.closers = st, []func() error{st.Close, e.Close}
		s.logger.Info("embedded etcd started", "dataDir", s.dataDir)
	case Etcd3:
		client, err := etcd3.Dial(ctx, s.etcd)
		if err != nil {
			return nil, err
		}
		// Reads and writes go through a client per member, so that a
		// failed or frozen member is passed over; watches and compaction
		// stay on the client of the whole cluster.
		members, err := etcd3.DialMembers(s.etcd)
		if err != nil {
			client.Close()
			return nil, err
		}
		kvs := make([]clientv3.KV, len(members))
		for i, m := range members {
			kvs[i] = m
		}
		st := etcd3.New(client, etcd3.WithPrefix(s.prefix), etcd3.WithMembers(kvs...), etcd3.WithAttemptTimeout(s.attemptTimeout),
			etcd3.WithMaxObjectBytes(s.maxObjectBytes))
		closeMembers := func() error {
			var errs []error
			for _, m := range members {
				errs = append(errs, m.Close())
			}
			return errors.Join(errs...)
		}
		compactCtx, stopCompactor := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if s.compactionInterval > 0 {
				etcd3.RunCompactor(compactCtx, client, s.compactionInterval)
			}
		}()
		s.store = st
		s.closers = []func() error{st.Close, func() error { stopCompactor(); <-done; return nil }, closeMembers, client.Close}
		s.logger.Info("connected to etcd", "servers", s.etcd.Endpoints)
	default:
		return nil, fmt.Errorf("unknown storage backend %q", s.backend)
	}
	if s.encryption != nil && s.encryptionReload > 0 {
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.encryption.Watch(ctx, s.encryptionReload, s.logger)
		}()
		s.closers = append([]func() error{func() error { stop(); <-done; return nil }}, s.closers...)
	}
	if s.watchCache.Enabled && s.backend != Memory {
		// The caches close before the backend they watch.
		s.caches = cacher.NewFactory(storage.FactoryFunc(s.encrypted), s.watchCache, cacher.WithLogger(s.logger), cacher.WithMetrics(s.metrics))
		s.closers = append([]func() error{s.caches.Close}, s.closers...)
	}
	return s.store, nil
}

// encrypted is the resource's view of the backend: values encrypted as the
// encryption configuration says, or the backend itself without one.
func (s *Storage) encrypted(resource meta.GroupResource) (storage.Interface, error) {
	s.mu.Lock()
	st := s.store
	s.mu.Unlock()
	if st == nil {
		return nil, errors.New("storage is closed")
	}
	return s.view(st, resource), nil
}

// view is the resource's view of the backend st: instrumented next to the
// backend (its metrics count what etcd is asked), then encrypted.
func (s *Storage) view(st storage.Interface, resource meta.GroupResource) storage.Interface {
	v := instrument(st, s.metrics, resource)
	if s.encryption != nil {
		v = encryption.Wrap(v, s.encryption.For(resource), s.prefix)
	}
	return v
}

var _ storage.RootedFactory = (*Storage)(nil)

// For returns the resource's storage, opening the backend if needed: the
// backend behind the resource's watch cache when it has one.
func (s *Storage) For(resource meta.GroupResource) (storage.Interface, error) {
	return s.ForRoot(resource, storage.KeyRoot(resource))
}

// ForRoot is For for a resource whose keys live under root (a registry
// store with a custom KeyRoot): its watch cache holds that root.
func (s *Storage) ForRoot(resource meta.GroupResource, root string) (storage.Interface, error) {
	st, err := s.open(context.Background())
	if err != nil {
		return nil, fmt.Errorf("opening %s storage: %w", s.backend, err)
	}
	s.mu.Lock()
	caches := s.caches
	s.mu.Unlock()
	if caches != nil {
		return caches.ForRoot(resource, root)
	}
	return s.view(st, resource), nil
}

// Check is a readiness check: the backend answers within two seconds.
func (s *Storage) Check(r *http.Request) error {
	s.mu.Lock()
	st := s.store
	s.mu.Unlock()
	if st == nil {
		return errors.New("storage not open")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	_, err := st.CurrentRevision(ctx)
	return err
}

// Close stops the backend; it is safe to call more than once.
func (s *Storage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, c := range s.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	s.closers, s.store, s.caches = nil, nil, nil
	return errors.Join(errs...)
}
