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

	// Set by Complete.

	// Sink writes the events; nil when auditing is off.
	Sink *audit.LogSink
	// Policy is the parsed PolicyFile; nil without one.
	Policy *audit.Policy
}

// NewAuditOptions returns the default: no audit log.
func NewAuditOptions() *AuditOptions { return &AuditOptions{} }

// AddFlags adds --audit-log-path and --audit-policy-file.
func (o *AuditOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath,
		"If set, all requests coming to the apiserver will be logged to this file.  '-' means standard out. "+
			"Events are audit.k8s.io/v1 Events, one JSON object per line, at the levels of --audit-policy-file (without one, every request at the Metadata level).")
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile,
		"Path to the file that defines the audit policy configuration (an audit.k8s.io/v1 Policy: the first rule a request matches gives its level: None, Metadata, Request or RequestResponse).")
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
	o.Sink, o.Policy = nil, nil
	if o.PolicyFile != "" {
		p, err := audit.ReadPolicyFile(o.PolicyFile)
		if err != nil {
			return fmt.Errorf("--audit-policy-file: %w", err)
		}
		o.Policy = p
	}
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
	if o.Policy != nil {
		c.AuditPolicy = o.Policy
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
