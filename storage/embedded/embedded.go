//go:build !apikit_noembed

package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/etcd3"
)

// Built is true when this binary links the embedded etcd: it was built
// without -tags apikit_noembed.
const Built = true

// Etcd is a running embedded etcd.
type Etcd struct {
	etcd           *embed.Etcd
	client         *clientv3.Client
	level          *quietingLevel
	maxObjectBytes int64
	once           sync.Once
}

// Start starts etcd on cfg.DataDir and returns once it serves requests, or
// fails when ctx ends first.
func Start(ctx context.Context, cfg Config) (*Etcd, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("embedded: DataDir is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: creating the data directory: %w", err)
	}
	level := &quietingLevel{base: cfg.LogLevel}
	if level.base == nil {
		level.base = slog.LevelError
	}
	ec, err := etcdConfig(cfg, level)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("embedded: starting etcd in %s: %w", cfg.DataDir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		level.closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("embedded: etcd failed while starting: %w", err)
	case <-e.Server.StopNotify():
		level.closing.Store(true)
		e.Close()
		return nil, errors.New("embedded: etcd stopped while starting")
	case <-ctx.Done():
		level.closing.Store(true)
		e.Close()
		return nil, fmt.Errorf("embedded: waiting for etcd: %w", ctx.Err())
	}
	return &Etcd{etcd: e, client: v3client.New(e.Server), level: level, maxObjectBytes: maxObjectBytes(cfg)}, nil
}

// quietingLevel is the level of etcd's logger, raised past everything
// while etcd shuts down: closing its listeners and background loops logs
// errors ("use of closed network connection", a storage version it can no
// longer update) that say nothing about the data.
type quietingLevel struct {
	base    slog.Leveler
	closing atomic.Bool
}

// Level implements slog.Leveler.
func (l *quietingLevel) Level() slog.Level {
	if l.closing.Load() {
		return slog.Level(1 << 30)
	}
	return l.base.Level()
}

// benignFilter drops an error etcd logs on every fresh data directory:
// its storage version monitor runs before the backend has committed the
// raft term, fails, and succeeds on its next round a few seconds later.
type benignFilter struct{ zapcore.Core }

// With implements zapcore.Core.
func (f benignFilter) With(fields []zapcore.Field) zapcore.Core {
	return benignFilter{f.Core.With(fields)}
}

// Check implements zapcore.Core.
func (f benignFilter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if f.Enabled(e.Level) {
		return ce.AddCore(e, f)
	}
	return ce
}

// Write implements zapcore.Core, dropping the benign error.
func (f benignFilter) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Message == "failed to update storage version" {
		for _, fl := range fields {
			if err, ok := fl.Interface.(error); ok && strings.Contains(err.Error(), "missing term information") {
				return nil
			}
		}
	}
	return f.Core.Write(e, fields)
}

func etcdConfig(cfg Config, level slog.Leveler) (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Dir = cfg.DataDir
	ec.Name = cfg.Name
	if ec.Name == "" {
		ec.Name = "apikit"
	}
	// Port 0 picks a free loopback port each start, so two servers on one
	// machine never collide. Nothing dials the peer URL of a single member,
	// and advertising the same literal URL each start keeps the member's
	// identity stable across restarts.
	peer, _ := url.Parse("http://127.0.0.1:0")
	ec.ListenPeerUrls = []url.URL{*peer}
	ec.AdvertisePeerUrls = []url.URL{*peer}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ListenClientUrls, ec.AdvertiseClientUrls = nil, nil
	if cfg.ClientURL != "" {
		u, err := url.Parse(cfg.ClientURL)
		if err != nil {
			return nil, fmt.Errorf("embedded: ClientURL: %w", err)
		}
		ec.ListenClientUrls = []url.URL{*u}
		ec.AdvertiseClientUrls = []url.URL{*u}
	}
	// A single member has no peers to hear from: a short election timeout
	// only makes it elect itself sooner at start (about 0.1 s instead of
	// 0.7 s with etcd's defaults).
	ec.TickMs, ec.ElectionMs = 10, 100
	switch {
	case cfg.CompactionRetention == 0:
		ec.AutoCompactionMode, ec.AutoCompactionRetention = embed.CompactorModePeriodic, DefaultCompactionRetention.String()
	case cfg.CompactionRetention > 0:
		ec.AutoCompactionMode, ec.AutoCompactionRetention = embed.CompactorModePeriodic, cfg.CompactionRetention.String()
	}
	// The limit objects meet is the store's, never etcd's own.
	ec.MaxRequestBytes = max(ec.MaxRequestBytes, uint(maxObjectBytes(cfg)+storage.MaxObjectOverheadBytes))
	if cfg.QuotaBackendBytes > 0 {
		ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	}
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(benignFilter{etcd3.ZapLogger(logger, level).Core()}))
	ec.EnableGRPCGateway = false
	ec.Metrics = "basic"
	return ec, nil
}

// Client returns the in-process client. It stays valid until Close.
func (e *Etcd) Client() *clientv3.Client { return e.client }

// Storage returns a storage.Interface on this etcd, with the object size
// limit of its Config unless opts set another.
func (e *Etcd) Storage(opts ...etcd3.Option) storage.Interface {
	return etcd3.New(e.client, append([]etcd3.Option{etcd3.WithMaxObjectBytes(e.maxObjectBytes)}, opts...)...)
}

// Close stops etcd after the requests in flight; the data stays in
// DataDir. It is safe to call twice.
func (e *Etcd) Close() error {
	var err error
	e.once.Do(func() {
		e.level.closing.Store(true)
		err = e.client.Close()
		e.etcd.Close()
		select {
		case <-e.etcd.Server.StopNotify():
		case <-time.After(10 * time.Second):
			err = errors.Join(err, errors.New("embedded: etcd did not stop within 10s"))
		}
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
