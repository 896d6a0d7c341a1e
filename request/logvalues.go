package request

import (
	"context"
	"sync"
)

// LogValues collects key-value pairs that the filters and handlers below
// the server's HTTP log filter add to the request's one log line (who the
// user is, which priority level served it), as kube-apiserver's
// httplog.AddKeyValue does. It is safe for concurrent use: a timed-out
// request's handler may still add values while the line is written.
type LogValues struct {
	mu sync.Mutex
	kv []any
}

type logValuesKey struct{}

// WithLogValues returns a context that collects log values, and the
// collector.
func WithLogValues(ctx context.Context) (context.Context, *LogValues) {
	l := &LogValues{}
	return context.WithValue(ctx, logValuesKey{}, l), l
}

// AddLogValues adds key-value pairs to the request's log line; it does
// nothing when the request is not being logged. Its arguments are made
// (a slice, each value boxed) before it can tell: on a path every request
// takes, LogValuesFrom first.
func AddLogValues(ctx context.Context, kv ...any) {
	LogValuesFrom(ctx).Add(kv...)
}

// LogValuesFrom returns the collector of the request's log line, nil when
// the request is not being logged (its Add then does nothing).
func LogValuesFrom(ctx context.Context) *LogValues {
	l, _ := ctx.Value(logValuesKey{}).(*LogValues)
	return l
}

// Add adds key-value pairs to the log line; nothing on a nil collector.
func (l *LogValues) Add(kv ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.kv = append(l.kv, kv...)
	l.mu.Unlock()
}

// Values returns a copy of the pairs added so far.
func (l *LogValues) Values() []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]any(nil), l.kv...)
}
