package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// The formats of --audit-log-format.
const (
	// FormatJSON writes each event as one line of audit.k8s.io/v1 JSON.
	FormatJSON = "json"
	// FormatLegacy writes each event as one line of text: the few fields
	// kube-apiserver's legacy format has.
	FormatLegacy = "legacy"
)

// LogFormats are the formats a LogSink writes.
var LogFormats = []string{FormatJSON, FormatLegacy}

// LogSink writes events one per line, as kube-apiserver's log backend
// does, in JSON or the legacy text format.
type LogSink struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	legacy bool
	failed bool
}

// NewLogSink writes events to w in format (FormatJSON when "").
func NewLogSink(w io.Writer, format string) *LogSink {
	return &LogSink{w: w, legacy: format == FormatLegacy}
}

// LogFileOptions are how a log file is written and rotated; the rotation
// fields mean what kube-apiserver's --audit-log-maxsize, -maxbackup,
// -maxage and -compress mean, including their zero values.
type LogFileOptions struct {
	// Format is FormatJSON (the default, for "") or FormatLegacy.
	Format string
	// MaxSize is the size in megabytes at which the file is rotated;
	// 0 means lumberjack's default, 100, as in kube-apiserver.
	MaxSize int
	// MaxBackups is how many rotated files are kept; 0 keeps all (subject
	// to MaxAge).
	MaxBackups int
	// MaxAge is how many days a rotated file is kept, by the time in its
	// name; 0 keeps them regardless of age.
	MaxAge int
	// Compress gzips rotated files.
	Compress bool
}

// OpenLogFile appends events to the file at path, creating it (mode 0600:
// an audit log says who did what) and its directory, and rotates it as
// opts say: the rotated file is renamed with the time of rotation, in UTC,
// before its extension (audit-2026-12-01T14-40-05.123.log), and a new one
// with the same mode takes its place. "-" means standard output (never
// rotated), as for --audit-log-path.
func OpenLogFile(path string, opts LogFileOptions) (*LogSink, error) {
	if path == "-" {
		return NewLogSink(os.Stdout, opts.Format), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	// lumberjack creates a missing file 0600 but keeps an existing file's
	// mode; creating it here also reports an unwritable path at start,
	// not at the first request.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	lj := &lumberjack.Logger{
		Filename:   path,
		MaxSize:    opts.MaxSize,
		MaxBackups: opts.MaxBackups,
		MaxAge:     opts.MaxAge,
		Compress:   opts.Compress,
	}
	s := NewLogSink(lj, opts.Format)
	s.closer = lj
	return s, nil
}

// Log implements Sink. A write error is logged once (until writes work
// again); the request it records goes on.
func (l *LogSink) Log(ev *Event) { _ = l.store(ev) }

// store writes ev's line and says whether that failed.
func (l *LogSink) store(ev *Event) error {
	var line []byte
	if l.legacy {
		line = []byte(legacyLine(ev))
	} else {
		var err error
		if line, err = json.Marshal(ev); err != nil {
			slog.Error("encoding an audit event", "auditID", ev.AuditID, "err", err)
			return fmt.Errorf("encoding audit event %s: %w", ev.AuditID, err)
		}
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(line); err != nil {
		if !l.failed {
			slog.Error("writing the audit log failed; events are being lost", "err", err)
		}
		l.failed = true
		return fmt.Errorf("writing the audit log: %w", err)
	}
	l.failed = false
	return nil
}

// legacyLine is kube-apiserver's legacy text form of an event: who, as
// whom, from where, what and the answer, each quoted, with placeholders
// such as <none> for what the event lacks.
func legacyLine(ev *Event) string {
	quoted := func(ss []string) string {
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = strconv.Quote(s)
		}
		return strings.Join(q, ",")
	}
	user, groups := "<none>", "<none>"
	if ev.User.Username != "" {
		user = ev.User.Username
		if len(ev.User.Groups) > 0 {
			groups = quoted(ev.User.Groups)
		}
	}
	as, asGroups := "<self>", "<lookup>"
	if ev.ImpersonatedUser != nil {
		as = ev.ImpersonatedUser.Username
		if ev.ImpersonatedUser.Groups != nil {
			asGroups = quoted(ev.ImpersonatedUser.Groups)
		}
	}
	namespace := "<none>"
	if ev.ObjectRef != nil && ev.ObjectRef.Namespace != "" {
		namespace = ev.ObjectRef.Namespace
	}
	response := "<deferred>"
	if ev.ResponseStatus != nil {
		response = strconv.Itoa(int(ev.ResponseStatus.Code))
	}
	ip := "<unknown>"
	if len(ev.SourceIPs) > 0 {
		ip = ev.SourceIPs[0]
	}
	return fmt.Sprintf(`%s AUDIT: id=%q stage=%q ip=%q method=%q user=%q groups=%q as=%q asgroups=%q user-agent=%q namespace=%q uri=%q response="%s"`,
		time.Time(ev.RequestReceivedTimestamp).UTC().Format(time.RFC3339Nano), ev.AuditID, ev.Stage, ip, ev.Verb, user, groups, as, asGroups,
		ev.UserAgent, namespace, ev.RequestURI, response)
}

// Close closes the file, if the sink opened one.
func (l *LogSink) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closer == nil {
		return nil
	}
	err := l.closer.Close()
	l.closer = nil
	l.w = io.Discard
	return err
}
