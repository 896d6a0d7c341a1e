// Package testlog holds what tests of apikit (and of the e2e module, which
// may import it) share to read logs: a buffer that a logger or a process
// writes while the test reads it, and a capture of the default slog
// logger.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer that a writer (a logger, a process's output)
// and the test reading it may use at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Capture makes the default slog logger write every level, debug
// included, as text to the returned Buffer until the test ends. Tests
// that capture must not run in parallel with others that log.
func Capture(t testing.TB) *Buffer {
	t.Helper()
	buf := &Buffer{}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return buf
}
