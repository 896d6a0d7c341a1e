package storage

import (
	"errors"
	"fmt"
)

// Code classifies a storage error.
type Code int

// Error codes.
const (
	CodeNotFound Code = iota + 1
	CodeAlreadyExists
	CodeConflict
	CodeExpired
	CodeTooLargeResourceVersion
	CodeInvalidObject
	CodeUnavailable
	CodeTooLarge
)

// Error is the error type every backend returns for the cases callers branch on.
type Error struct {
	Code Code
	Key  string
	// Revision is the revision involved: the current one of a Conflict, the
	// compacted one of an Expired, the requested one of a
	// TooLargeResourceVersion.
	Revision int64
	// Limit is the object size limit a TooLarge value exceeded, 0 when the
	// backend refused it without saying its limit.
	Limit int64
	// Message, when set, is written for clients: it names no key and
	// carries no error chain (Error adds those).
	Message string
	Err     error
	// Continue, on the ErrExpired of a continued list, is a token that
	// resumes the list at the latest revision (see NewContinueExpired).
	Continue string
}

// Sentinel values for errors.Is; only Code is compared.
var (
	ErrNotFound                = &Error{Code: CodeNotFound}
	ErrAlreadyExists           = &Error{Code: CodeAlreadyExists}
	ErrConflict                = &Error{Code: CodeConflict}
	ErrExpired                 = &Error{Code: CodeExpired}
	ErrTooLargeResourceVersion = &Error{Code: CodeTooLargeResourceVersion}
	ErrInvalidObject           = &Error{Code: CodeInvalidObject}
	ErrUnavailable             = &Error{Code: CodeUnavailable}
	ErrTooLarge                = &Error{Code: CodeTooLarge}
)

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		switch e.Code {
		case CodeNotFound:
			msg = "key not found"
		case CodeAlreadyExists:
			msg = "key already exists"
		case CodeConflict:
			msg = "the object has been modified; please apply your changes to the latest version and try again"
		case CodeExpired:
			msg = "the requested revision has been compacted"
		case CodeTooLargeResourceVersion:
			msg = "Too large resource version"
		case CodeInvalidObject:
			msg = "invalid object"
		case CodeUnavailable:
			msg = "storage unavailable"
		case CodeTooLarge:
			msg = "object too large"
		}
	}
	if e.Key != "" {
		msg = fmt.Sprintf("%s (key %q)", msg, e.Key)
	}
	if e.Err != nil {
		msg = fmt.Sprintf("%s: %v", msg, e.Err)
	}
	return msg
}

// Is matches errors with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// NewNotFound returns ErrNotFound for key.
func NewNotFound(key string) error { return &Error{Code: CodeNotFound, Key: key} }

// NewAlreadyExists returns ErrAlreadyExists for key.
func NewAlreadyExists(key string) error { return &Error{Code: CodeAlreadyExists, Key: key} }

// NewConflict returns ErrConflict for key at its current revision.
func NewConflict(key string, current int64) error {
	return &Error{Code: CodeConflict, Key: key, Revision: current}
}

// NewExpired returns ErrExpired: rev is older than compacted.
func NewExpired(rev, compacted int64) error {
	return &Error{Code: CodeExpired, Revision: compacted,
		Message: fmt.Sprintf("too old resource version: %d (%d)", rev, compacted)}
}

// NewTooLargeResourceVersion returns ErrTooLargeResourceVersion: rev is
// newer than current.
func NewTooLargeResourceVersion(rev, current int64) error {
	return &Error{Code: CodeTooLargeResourceVersion, Revision: rev,
		Message: fmt.Sprintf("Too large resource version: %d, current: %d", rev, current)}
}

// NewUnavailable wraps a backend failure.
func NewUnavailable(err error) error { return &Error{Code: CodeUnavailable, Err: err} }

// NewInvalidObject is a request a backend cannot serve as asked (a bad
// continue token, a limit with a revision it cannot page at), with the
// message the client sees.
func NewInvalidObject(format string, args ...any) error {
	return &Error{Code: CodeInvalidObject, Message: fmt.Sprintf(format, args...)}
}

// DefaultMaxObjectBytes is the size limit of a stored object on every
// backend: etcd's default request limit (--max-request-bytes, 1.5 MiB)
// less MaxObjectOverheadBytes, so that the limit an object meets is the
// same on etcd, the embedded etcd and in memory.
const DefaultMaxObjectBytes = 3<<19 - MaxObjectOverheadBytes

// MaxObjectOverheadBytes is what the etcd transaction that writes an object
// adds to its size at most: the key three times (compare, put, get) and the
// request's framing. A backend whose etcd accepts requests of N bytes can
// store objects of N - MaxObjectOverheadBytes.
const MaxObjectOverheadBytes = 8 << 10

// NewTooLarge returns ErrTooLarge: a value of size bytes is over limit.
func NewTooLarge(size, limit int64) error {
	return &Error{Code: CodeTooLarge, Limit: limit,
		Message: fmt.Sprintf("the object is %d bytes, over the limit of %d", size, limit)}
}

// CheckSize returns ErrTooLarge when value is over limit bytes; a limit of
// zero or less checks nothing. Backends call it before every write.
func CheckSize(value []byte, limit int64) error {
	if limit > 0 && int64(len(value)) > limit {
		return NewTooLarge(int64(len(value)), limit)
	}
	return nil
}

// CodeOf returns the Code of err, or 0 when it is not a storage error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
