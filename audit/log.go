package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// LogSink writes events as JSON lines, one event per line, as
// kube-apiserver's log backend (--audit-log-format=json) does.
type LogSink struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	failed bool
}

// NewLogSink writes events to w.
func NewLogSink(w io.Writer) *LogSink { return &LogSink{w: w} }

// OpenLogFile appends events to the file at path, creating it (mode 0600:
// an audit log says who did what) and its directory; "-" means standard
// output, as for --audit-log-path.
func OpenLogFile(path string) (*LogSink, error) {
	if path == "-" {
		return NewLogSink(os.Stdout), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &LogSink{w: f, closer: f}, nil
}

// Log implements Sink. A write error is logged once (until writes work
// again); the request it records has already been answered.
func (l *LogSink) Log(ev *Event) {
	line, err := json.Marshal(ev)
	if err != nil {
		slog.Error("encoding an audit event", "auditID", ev.AuditID, "err", err)
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(line); err != nil {
		if !l.failed {
			slog.Error("writing the audit log failed; events are being lost", "err", err)
		}
		l.failed = true
		return
	}
	l.failed = false
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
