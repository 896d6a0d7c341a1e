package etcd3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/tracing"
)

// DefaultDialTimeout is kube-apiserver's etcd dial timeout.
const DefaultDialTimeout = 20 * time.Second

// Keepalives notice a member that went away while idle, so that watches
// move to another one.
const (
	keepAliveTime    = 30 * time.Second
	keepAliveTimeout = 10 * time.Second
)

// defaultLogLevel is the client's log level when Config names none.
var defaultLogLevel slog.Leveler = slog.LevelWarn

// Config says how to reach an etcd cluster.
type Config struct {
	// Endpoints are the client URLs of the cluster's members, like
	// "https://10.0.0.1:2379".
	Endpoints []string
	// CAFile verifies the servers' certificates; empty uses the system's
	// roots for https endpoints.
	CAFile string
	// CertFile and KeyFile are the client certificate and key presented to
	// the servers; both or neither.
	CertFile, KeyFile string
	// DialTimeout bounds connecting and the first request; zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger receives the client's logs at or above LogLevel (nil: warn
	// and above). A nil Logger discards them.
	Logger   *slog.Logger
	LogLevel slog.Leveler
}

// TLSConfig returns the TLS configuration the files in c describe, or nil
// when c names none.
func (c Config) TLSConfig() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the etcd CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA file %s holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("etcd client certificate and key files must be given together")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the etcd client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Dial connects to the cluster and checks that it answers a read within
// the dial timeout (or ctx, if it ends first); an unreachable cluster is
// ErrUnavailable. The caller closes the client.
func Dial(ctx context.Context, cfg Config) (*clientv3.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd3: no endpoints")
	}
	tlsCfg, err := cfg.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd3: %w", err)
	}
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	level := cfg.LogLevel
	if level == nil {
		level = defaultLogLevel
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		TLS:                  tlsCfg,
		DialTimeout:          timeout,
		Logger:               ZapLogger(cfg.Logger, level),
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		DialOptions:          traceDialOptions(),
	})
	if err != nil {
		return nil, storage.NewUnavailable(fmt.Errorf("etcd3: connecting to %v: %w", cfg.Endpoints, err))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The key kube-apiserver's etcd health check reads.
	if _, err := client.Get(ctx, "health"); err != nil {
		client.Close()
		return nil, storage.NewUnavailable(fmt.Errorf("etcd3: no answer from %v: %w", cfg.Endpoints, err))
	}
	return client, nil
}

// traceDialOptions give every etcd gRPC call a client span when the
// request it serves is traced (the span of tracing.Start in the store's
// methods is then its parent), and carry the trace context to etcd.
func traceDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStatsHandler(traceDialHandler())}
}

// traceDialHandler is the etcd client's stats handler: otelgrpc's, for
// traced calls only.
func traceDialHandler() stats.Handler {
	return tracedOnly{otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(tracing.ContextProvider()),
		otelgrpc.WithPropagators(tracing.Propagator),
		// apikit's metrics are its own (/metrics): the gRPC client's
		// would go to OpenTelemetry's global provider, and only for
		// the calls tracedOnly lets through.
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()))}
}

// tracedOnly hands an etcd call to otelgrpc's handler only when the context
// it is made with carries a trace context. For any other call the handler
// would parse the method name, build attribute sets and start a span that
// records nothing (~1.5% of a GET's CPU under load, for the shared quorum
// read of the revision); such a call has no trace context to carry to etcd
// either.
type tracedOnly struct{ h stats.Handler }

// traced reports whether ctx carries a trace context, sampled or not: an
// unsampled one is still carried to etcd, as before tracedOnly.
func traced(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsValid() }

// TagRPC implements stats.Handler.
func (t tracedOnly) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if !traced(ctx) {
		return ctx
	}
	return t.h.TagRPC(ctx, info)
}

// HandleRPC implements stats.Handler. ctx is what TagRPC returned: traced
// exactly when TagRPC handed the call on.
func (t tracedOnly) HandleRPC(ctx context.Context, rs stats.RPCStats) {
	if traced(ctx) {
		t.h.HandleRPC(ctx, rs)
	}
}

// TagConn implements stats.Handler.
func (t tracedOnly) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return t.h.TagConn(ctx, info)
}

// HandleConn implements stats.Handler.
func (t tracedOnly) HandleConn(ctx context.Context, cs stats.ConnStats) { t.h.HandleConn(ctx, cs) }
