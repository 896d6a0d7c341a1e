package authn

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReloadInterval is how often a file-backed authenticator (a CA
// bundle, a token file) looks at its file for changes.
const DefaultReloadInterval = time.Second

// rereadEvery forces a full read now and then even when the file's size,
// modification time and identity look unchanged, in case a file system
// reports them coarsely.
const rereadEvery = time.Minute

// ParseError is a file that was read but whose content is not valid (a CA
// bundle without certificates, a malformed token file).
type ParseError struct {
	Path string
	Err  error
}

// Error names the file and the problem.
func (e *ParseError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *ParseError) Unwrap() error { return e.Err }

// fileSource holds the parsed content of a file and re-reads it when it
// changes. It is checked lazily, by the requests that use it, at most once
// per interval and by one of them at a time; the others keep using the
// current content. A file that becomes unreadable or invalid leaves the
// last good content in place (and says so in the log, once per change).
type fileSource[T any] struct {
	path     string
	what     string // "client CA bundle", for the log
	parse    func([]byte) (T, error)
	interval time.Duration
	now      func() time.Time

	cur       atomic.Pointer[T]
	nextCheck atomic.Int64 // UnixNano
	mu        sync.Mutex   // held by the one checking
	seen      os.FileInfo  // of the last version read, good or bad
	data      []byte       // of the last version read, good or bad
	readAt    time.Time
}

// newFileSource reads the file once; an error here is the caller's to
// report (a missing --client-ca-file stops the server).
func newFileSource[T any](path, what string, parse func([]byte) (T, error)) (*fileSource[T], error) {
	f := &fileSource[T]{path: path, what: what, parse: parse, interval: DefaultReloadInterval, now: time.Now}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	v, err := parse(data)
	if err != nil {
		return nil, &ParseError{Path: path, Err: err}
	}
	f.cur.Store(&v)
	f.seen, f.data, f.readAt = info, data, f.now()
	f.nextCheck.Store(f.readAt.Add(f.interval).UnixNano())
	return f, nil
}

// setInterval changes the check interval, starting now.
func (f *fileSource[T]) setInterval(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.interval = d
	f.nextCheck.Store(f.now().Add(d).UnixNano())
}

// get returns the current content, first checking the file if it is time.
func (f *fileSource[T]) get() T {
	now := f.now()
	if now.UnixNano() >= f.nextCheck.Load() && f.mu.TryLock() {
		if now.UnixNano() >= f.nextCheck.Load() {
			f.check(now, false)
			f.nextCheck.Store(now.Add(f.interval).UnixNano())
		}
		f.mu.Unlock()
	}
	return *f.cur.Load()
}

// reload reads the file now, whatever it looks like, and reports why the
// content was not replaced, if it was not.
func (f *fileSource[T]) reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.check(f.now(), true)
}

// check re-reads the file if it changed (or force); f.mu is held.
func (f *fileSource[T]) check(now time.Time, force bool) error {
	info, err := os.Stat(f.path)
	if err != nil {
		return f.keep(nil, fmt.Errorf("reading %s: %w", f.path, err))
	}
	same := f.seen != nil && os.SameFile(f.seen, info) && info.Size() == f.seen.Size() && info.ModTime().Equal(f.seen.ModTime())
	if same && !force && now.Sub(f.readAt) < rereadEvery {
		return nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return f.keep(nil, fmt.Errorf("reading %s: %w", f.path, err))
	}
	f.readAt = now
	if bytes.Equal(data, f.data) {
		f.seen = info
		return nil
	}
	v, err := f.parse(data)
	if err != nil {
		return f.keep(func() { f.seen, f.data = info, data }, &ParseError{Path: f.path, Err: err})
	}
	f.cur.Store(&v)
	f.seen, f.data = info, data
	slog.Info("reloaded "+f.what, "path", f.path)
	return nil
}

// keep leaves the current content in place after a failed reload, logging
// the failure the first time it is seen. remember, if not nil, records
// the bad version so that it is not parsed (and logged) again.
func (f *fileSource[T]) keep(remember func(), err error) error {
	if remember != nil {
		remember()
	} else if f.seen == nil {
		return err
	} else {
		f.seen = nil // unreadable: log again once it is back
	}
	slog.Warn("keeping the previous "+f.what+": the file could not be loaded", "path", f.path, "err", err)
	return err
}
