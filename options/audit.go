package options

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server"
)

// AuditOptions turn the audit log on: requests with who made them (and
// whom they impersonated), the verb, the object, the response code and the
// times, and the bodies when the policy asks, as audit.k8s.io/v1 Events,
// one JSON line each. Without --audit-policy-file apikit logs every request
// at the Metadata level (kube-apiserver logs nothing without a policy);
// with one, the policy decides, as in kube-apiserver.
type AuditOptions struct {
	// LogPath is the file events are appended to; "-" is standard output,
	// "" turns auditing off.
	LogPath string
	// PolicyFile is an audit.k8s.io/v1 Policy (YAML or JSON).
	PolicyFile string
	// LogFile is the log's format and rotation (--audit-log-format,
	// --audit-log-maxsize, -maxbackup, -maxage, -compress).
	LogFile audit.LogFileOptions
	// LogMode is how events reach the file (--audit-log-mode): blocking,
	// blocking-strict or batch, with LogBatch's settings.
	LogMode  string
	LogBatch audit.BatchConfig
	// WebhookConfigFile is a kubeconfig naming an audit webhook
	// (--audit-webhook-config-file), posted EventLists in WebhookMode,
	// retried from WebhookInitialBackoff.
	WebhookConfigFile     string
	WebhookInitialBackoff time.Duration
	WebhookMode           string
	WebhookBatch          audit.BatchConfig
	// LogTruncate and WebhookTruncate, when enabled, leave the objects out
	// of events too large, and drop those still too large
	// (--audit-*-truncate-*).
	LogTruncate, WebhookTruncate TruncateOptions

	// Set by Complete.

	// Sink writes the events; nil when auditing is off.
	Sink *audit.LogSink
	// Backend is Sink as LogMode runs it, with the webhook as WebhookMode
	// runs it: the server's audit sink.
	Backend audit.Sink
	// closers stop the backends, queues before what they feed.
	closers []func() error
	// dropped are the batching backends' counts of dropped events.
	dropped []auditDrops
	// Policy is the parsed PolicyFile; nil without one.
	Policy *audit.Policy
}

// TruncateOptions are a backend's --audit-*-truncate-* flags.
type TruncateOptions struct {
	Enabled bool
	audit.TruncateConfig
}

// NewAuditOptions returns the default: no audit log; when one is asked
// for, JSON, rotated at 100 MB, old files kept (kube-apiserver's defaults).
func NewAuditOptions() *AuditOptions {
	return &AuditOptions{
		LogFile: audit.LogFileOptions{Format: audit.FormatJSON},
		LogMode: audit.ModeBlocking,
		// Batches of one: batching does not help a file (kube-apiserver's
		// log defaults).
		LogBatch: audit.BatchConfig{BufferSize: 10000, MaxBatchSize: 1},
		// kube-apiserver's webhook defaults.
		WebhookInitialBackoff: audit.DefaultWebhookInitialBackoff,
		WebhookMode:           audit.ModeBatch,
		WebhookBatch: audit.BatchConfig{BufferSize: 10000, MaxBatchSize: 400, MaxBatchWait: 30 * time.Second,
			ThrottleEnable: true, ThrottleQPS: 10, ThrottleBurst: 15},
		// 100 KB events, 10 MB batches, as kube-apiserver.
		LogTruncate:     TruncateOptions{TruncateConfig: audit.TruncateConfig{MaxEventSize: 100 << 10, MaxBatchSize: 10 << 20}},
		WebhookTruncate: TruncateOptions{TruncateConfig: audit.TruncateConfig{MaxEventSize: 100 << 10, MaxBatchSize: 10 << 20}},
	}
}

// AddFlags adds --audit-log-path, --audit-policy-file and the log file's
// format and rotation flags.
func (o *AuditOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath,
		"If set, all requests coming to the apiserver will be logged to this file.  '-' means standard out. "+
			"Events are audit.k8s.io/v1 Events, one per line (--audit-log-format), at the levels of --audit-policy-file (without one, every request at the Metadata level).")
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile,
		"Path to the file that defines the audit policy configuration (an audit.k8s.io/v1 Policy: the first rule a request matches gives its level: None, Metadata, Request or RequestResponse).")
	fs.IntVar(&o.LogFile.MaxAge, "audit-log-maxage", o.LogFile.MaxAge,
		"The maximum number of days to retain old audit log files based on the timestamp encoded in their filename.")
	fs.IntVar(&o.LogFile.MaxBackups, "audit-log-maxbackup", o.LogFile.MaxBackups,
		"The maximum number of old audit log files to retain. Setting a value of 0 will mean there's no restriction on the number of files.")
	fs.IntVar(&o.LogFile.MaxSize, "audit-log-maxsize", o.LogFile.MaxSize,
		"The maximum size in megabytes of the audit log file before it gets rotated (0: 100).")
	fs.BoolVar(&o.LogFile.Compress, "audit-log-compress", o.LogFile.Compress,
		"If set, the rotated log files will be compressed using gzip.")
	fs.StringVar(&o.LogFile.Format, "audit-log-format", o.LogFile.Format,
		"Format of saved audits. \"legacy\" indicates 1-line text format for each event. \"json\" indicates structured json format. Known formats are "+
			strings.Join(audit.LogFormats, ",")+".")
	addBatchFlags(fs, "log", &o.LogMode, &o.LogBatch)
	addTruncateFlags(fs, "log", &o.LogTruncate)
	fs.StringVar(&o.WebhookConfigFile, "audit-webhook-config-file", o.WebhookConfigFile,
		"Path to a kubeconfig formatted file that defines the audit webhook configuration.")
	fs.DurationVar(&o.WebhookInitialBackoff, "audit-webhook-initial-backoff", o.WebhookInitialBackoff,
		"The amount of time to wait before retrying the first failed request.")
	addBatchFlags(fs, "webhook", &o.WebhookMode, &o.WebhookBatch)
	addTruncateFlags(fs, "webhook", &o.WebhookTruncate)
}

// addTruncateFlags adds --audit-<plugin>-truncate-*.
func addTruncateFlags(fs *pflag.FlagSet, plugin string, t *TruncateOptions) {
	fs.BoolVar(&t.Enabled, "audit-"+plugin+"-truncate-enabled", t.Enabled,
		"Whether event and batch truncating is enabled.")
	fs.Int64Var(&t.MaxBatchSize, "audit-"+plugin+"-truncate-max-batch-size", t.MaxBatchSize,
		"Maximum size of the batch sent to the underlying backend. Actual serialized size can be several hundreds of bytes greater. "+
			"If a batch exceeds this limit, it is split into several batches of smaller size.")
	fs.Int64Var(&t.MaxEventSize, "audit-"+plugin+"-truncate-max-event-size", t.MaxEventSize,
		"Maximum size of the audit event sent to the underlying backend. If the size of an event is greater than this number, "+
			"first request and response are removed, and if this doesn't reduce the size enough, event is discarded.")
}

// addBatchFlags adds --audit-<plugin>-mode and -batch-*.
func addBatchFlags(fs *pflag.FlagSet, plugin string, mode *string, cfg *audit.BatchConfig) {
	fs.StringVar(mode, "audit-"+plugin+"-mode", *mode,
		"Strategy for sending audit events. Blocking indicates sending events should block server responses. "+
			"Batch causes the backend to buffer and write events asynchronously. Known modes are "+strings.Join(audit.Modes, ",")+".")
	fs.IntVar(&cfg.BufferSize, "audit-"+plugin+"-batch-buffer-size", cfg.BufferSize,
		"The size of the buffer to store events before batching and writing. Only used in batch mode.")
	fs.IntVar(&cfg.MaxBatchSize, "audit-"+plugin+"-batch-max-size", cfg.MaxBatchSize,
		"The maximum size of a batch. Only used in batch mode.")
	fs.DurationVar(&cfg.MaxBatchWait, "audit-"+plugin+"-batch-max-wait", cfg.MaxBatchWait,
		"The amount of time to wait before force writing the batch that hadn't reached the max size. Only used in batch mode.")
	fs.BoolVar(&cfg.ThrottleEnable, "audit-"+plugin+"-batch-throttle-enable", cfg.ThrottleEnable,
		"Whether batching throttling is enabled. Only used in batch mode.")
	fs.Float32Var(&cfg.ThrottleQPS, "audit-"+plugin+"-batch-throttle-qps", cfg.ThrottleQPS,
		"Maximum average number of batches per second. Only used in batch mode.")
	fs.IntVar(&cfg.ThrottleBurst, "audit-"+plugin+"-batch-throttle-burst", cfg.ThrottleBurst,
		"Maximum number of requests sent at the same moment if ThrottleQPS was not utilized before. Only used in batch mode.")
}

// Validate checks the path and, when there is a log, its format and
// rotation, with kube-apiserver's messages.
func (o *AuditOptions) Validate() []error {
	var errs []error
	if o.WebhookConfigFile != "" {
		if err := audit.ValidateBatch("webhook", o.WebhookMode, o.WebhookBatch); err != nil {
			errs = append(errs, err)
		}
		if err := audit.ValidateTruncate("webhook", o.WebhookTruncate.TruncateConfig); err != nil {
			errs = append(errs, err)
		}
	}
	if o.LogPath == "" {
		return errs
	}
	if err := audit.ValidateBatch("log", o.LogMode, o.LogBatch); err != nil {
		errs = append(errs, err)
	}
	if err := audit.ValidateTruncate("log", o.LogTruncate.TruncateConfig); err != nil {
		errs = append(errs, err)
	}
	if o.LogPath != "-" && filepath.Base(o.LogPath) == "." {
		errs = append(errs, fmt.Errorf("--audit-log-path %q is not a file", o.LogPath))
	}
	if !slices.Contains(audit.LogFormats, o.LogFile.Format) {
		errs = append(errs, fmt.Errorf("invalid audit log format %s, allowed formats are %q", o.LogFile.Format, strings.Join(audit.LogFormats, ",")))
	}
	for _, f := range []struct {
		flag  string
		value int
	}{{"--audit-log-maxage", o.LogFile.MaxAge}, {"--audit-log-maxbackup", o.LogFile.MaxBackups}, {"--audit-log-maxsize", o.LogFile.MaxSize}} {
		if f.value < 0 {
			errs = append(errs, fmt.Errorf("%s %v can't be a negative number", f.flag, f.value))
		}
	}
	return errs
}

// Complete opens the log file (creating it, mode 0600, and its directory),
// rotated as the flags say, reads the webhook's kubeconfig, and runs each
// in its mode.
func (o *AuditOptions) Complete() error {
	closeAll(o.closers)
	o.Sink, o.Backend, o.closers, o.Policy, o.dropped = nil, nil, nil, nil, nil
	if o.PolicyFile != "" {
		p, err := audit.ReadPolicyFile(o.PolicyFile)
		if err != nil {
			return fmt.Errorf("--audit-policy-file: %w", err)
		}
		o.Policy = p
	}
	var backends []audit.Sink
	if o.LogPath != "" {
		sink, err := audit.OpenLogFile(o.LogPath, o.LogFile)
		if err != nil {
			return fmt.Errorf("--audit-log-path: %w", err)
		}
		o.Sink = sink
		backends = append(backends, o.inMode("log", o.LogMode, o.LogBatch, o.LogTruncate, sink, sink))
	}
	if o.WebhookConfigFile != "" {
		k, err := certs.ReadKubeconfig(o.WebhookConfigFile)
		if err == nil {
			var hook *audit.WebhookSink
			if hook, err = audit.NewWebhookSink(k, o.WebhookInitialBackoff); err == nil {
				backends = append(backends, o.inMode("webhook", o.WebhookMode, o.WebhookBatch, o.WebhookTruncate, hook, hook))
			}
		}
		if err != nil {
			closeAll(o.closers)
			o.closers = nil
			return fmt.Errorf("--audit-webhook-config-file: %w", err)
		}
	}
	o.Backend = audit.Union(backends...)
	return nil
}

// inMode runs a backend in mode, behind truncation when enabled (as
// kube-apiserver: truncation before the queue), registering its closers
// (queue first).
func (o *AuditOptions) inMode(plugin, mode string, cfg audit.BatchConfig, trunc TruncateOptions, sink audit.StorerSink, closer interface{ Close() error }) audit.Sink {
	var out audit.Sink = sink
	switch mode {
	case audit.ModeBatch:
		b := audit.NewBatchSink(sink, cfg)
		o.closers = append(o.closers, b.Close)
		o.dropped = append(o.dropped, auditDrops{plugin: plugin, count: b.Dropped})
		out = b
	case audit.ModeBlockingStrict:
		out = audit.Strict(sink)
	}
	o.closers = append(o.closers, closer.Close)
	if trunc.Enabled {
		out = audit.NewTruncateSink(out, trunc.TruncateConfig)
	}
	return out
}

// closeAll sends the events still queued, then closes the backends.
func closeAll(closers []func() error) {
	for _, c := range closers {
		if err := c(); err != nil {
			slog.Warn("closing an audit backend", "err", err)
		}
	}
}

// auditDrops is a batching backend's count of the events it dropped.
type auditDrops struct {
	plugin string
	count  func() int64
}

// ApplyTo sets the server's audit sink, and serves the events its
// batching backends dropped as apiserver_audit_error_total.
func (o *AuditOptions) ApplyTo(c *server.Config) error {
	if o.Backend != nil {
		c.Audit = o.Backend
	}
	for _, d := range o.dropped {
		// Registered already when ApplyTo runs again for another server
		// of the chain: one count serves them all.
		_ = c.Metrics.RegisterAuditErrors(d.plugin, d.count)
	}
	if o.Policy != nil {
		c.AuditPolicy = o.Policy
	}
	return nil
}

// InstallSystemAPIs writes what a batch holds and closes the log file
// when the server has shut down (post-start hooks' context ends once
// requests have drained).
func (o *AuditOptions) InstallSystemAPIs(s *server.GenericServer) error {
	if len(o.closers) == 0 {
		return nil
	}
	closers := o.closers
	return s.AddPostStartHook("audit-log", func(ctx context.Context) error {
		go func() {
			<-ctx.Done()
			closeAll(closers)
		}()
		return nil
	})
}
