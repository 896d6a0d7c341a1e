package options

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/server"
)

// AuditOptions turn the audit log on: every authenticated request, with
// who made it (and whom they impersonated), the verb, the object, the
// response code and the times, as audit.k8s.io/v1 Events at the Metadata
// level, one JSON line each. kube-apiserver also needs an audit policy
// file; apikit logs every request at the Metadata level, which records no
// bodies and no credentials.
type AuditOptions struct {
	// LogPath is the file events are appended to; "-" is standard output,
	// "" turns auditing off.
	LogPath string

	// Set by Complete.

	// Sink writes the events; nil when auditing is off.
	Sink *audit.LogSink
}

// NewAuditOptions returns the default: no audit log.
func NewAuditOptions() *AuditOptions { return &AuditOptions{} }

// AddFlags adds --audit-log-path.
func (o *AuditOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath,
		"If set, all requests coming to the apiserver will be logged to this file.  '-' means standard out. "+
			"Events are audit.k8s.io/v1 Events at the Metadata level, one JSON object per line.")
}

// Validate checks the path.
func (o *AuditOptions) Validate() []error {
	if o.LogPath != "" && o.LogPath != "-" && filepath.Base(o.LogPath) == "." {
		return []error{fmt.Errorf("--audit-log-path %q is not a file", o.LogPath)}
	}
	return nil
}

// Complete opens the log file (creating it, mode 0600, and its directory).
func (o *AuditOptions) Complete() error {
	if o.Sink != nil {
		_ = o.Sink.Close()
	}
	o.Sink = nil
	if o.LogPath == "" {
		return nil
	}
	sink, err := audit.OpenLogFile(o.LogPath)
	if err != nil {
		return fmt.Errorf("--audit-log-path: %w", err)
	}
	o.Sink = sink
	return nil
}

// ApplyTo sets the server's audit sink.
func (o *AuditOptions) ApplyTo(c *server.Config) error {
	if o.Sink != nil {
		c.Audit = o.Sink
	}
	return nil
}

// InstallSystemAPIs closes the log file when the server has shut down
// (post-start hooks' context ends once requests have drained).
func (o *AuditOptions) InstallSystemAPIs(s *server.GenericServer) error {
	if o.Sink == nil || o.LogPath == "-" {
		return nil
	}
	sink := o.Sink
	return s.AddPostStartHook("audit-log", func(ctx context.Context) error {
		go func() {
			<-ctx.Done()
			if err := sink.Close(); err != nil {
				slog.Warn("closing the audit log", "err", err)
			}
		}()
		return nil
	})
}
