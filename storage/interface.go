package storage

import (
	"context"
)

// KeyValue is one stored object at one revision.
type KeyValue struct {
	Key string
	// Value is the encoded object as the registry wrote it.
	Value []byte
	// Revision is the revision of the last write to this key (etcd's
	// mod_revision). For a value returned by Delete it is the revision of
	// the delete.
	Revision int64
	// Memo, when not nil, is scratch space a caching layer keeps for as
	// long as it holds this exact value; see Memo.
	Memo *Memo
}

// Interface is a revisioned key-value store with watch. Keys are
// slash-separated paths; List and Watch take a prefix ending in "/".
//
// Every method takes a context and returns when it ends. Errors are *Error
// values testable with errors.Is against ErrNotFound, ErrAlreadyExists,
// ErrConflict, ErrExpired, ErrTooLargeResourceVersion, ErrInvalidObject
// (malformed client input such as a bad continue token, or a continue token
// combined with a revision), ErrUnavailable and ErrTooLarge (a value over
// the backend's object size limit, DefaultMaxObjectBytes unless configured:
// Create and GuaranteedUpdate refuse it and write nothing).
//
// Byte slices a store returns (values, previous values) are shared with the
// store and its other readers: callers must not modify them.
type Interface interface {
	// Create stores value under key if the key is absent and returns the new
	// revision; ErrAlreadyExists otherwise.
	Create(ctx context.Context, key string, value []byte) (int64, error)

	// Get returns the value under key, ErrNotFound if there is none.
	Get(ctx context.Context, key string, opts GetOptions) (KeyValue, error)

	// GuaranteedUpdate reads key, calls tryUpdate with the current value and
	// writes what it returns if nothing changed the key meanwhile; on a race
	// it reads again and calls tryUpdate again. An error from tryUpdate
	// aborts and is returned as is. Returning the current bytes unchanged
	// writes nothing and returns the current KeyValue. If the key does not
	// exist, tryUpdate is called with a zero KeyValue when
	// opts.IgnoreNotFound is set (creating the key), else ErrNotFound.
	GuaranteedUpdate(ctx context.Context, key string, opts UpdateOptions, tryUpdate UpdateFunc) (KeyValue, error)

	// Delete removes key and returns its last value with the revision of
	// the delete. opts.Precondition, if set, sees the current value and may
	// refuse; it is checked again if the value changed before the delete
	// could be committed. opts.ExpectedRevision, if not zero, must equal the
	// current revision (ErrConflict otherwise).
	Delete(ctx context.Context, key string, opts DeleteOptions) (KeyValue, error)

	// List returns the objects under prefix that match opts.Predicate, in
	// key order, at one consistent revision; see ListOptions.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)

	// Watch streams changes under prefix that touch objects matching
	// opts.Predicate; see WatchOptions. The channel closes when ctx ends,
	// when Stop is called, or after an ErrorEvent.
	Watch(ctx context.Context, prefix string, opts WatchOptions) (Watcher, error)

	// CurrentRevision returns the store's latest revision, read with quorum.
	// Consistent reads from a cache wait until the cache has seen it.
	CurrentRevision(ctx context.Context) (int64, error)

	// Close releases the backend's resources. It does not close a client
	// the caller passed in.
	Close() error
}

// UpdateFunc computes the new value from the current one. current.Value is
// nil when the key does not exist (only with UpdateOptions.IgnoreNotFound).
type UpdateFunc func(current KeyValue) (newValue []byte, err error)

// GetOptions select the revision a Get reads.
type GetOptions struct {
	// MinRevision, when not zero, requires the result to be at least this
	// fresh: a store behind it waits briefly, then fails with
	// ErrTooLargeResourceVersion. Zero reads the latest value.
	MinRevision int64
	// IgnoreNotFound returns a zero KeyValue instead of ErrNotFound.
	IgnoreNotFound bool
}

// UpdateOptions tune GuaranteedUpdate.
type UpdateOptions struct {
	// IgnoreNotFound calls tryUpdate with an empty value when the key is
	// absent, so the update creates it.
	IgnoreNotFound bool
	// Suggestion, when its Key is set, is a recent value of the key (from a
	// cache) used for the first attempt instead of a read; a stale suggestion
	// costs one retry, never correctness.
	Suggestion KeyValue
	// Precondition, when set, sees the current value before tryUpdate and
	// may refuse with an error that aborts the update. With IgnoreNotFound
	// it is called with a zero KeyValue when the key is absent.
	Precondition func(current KeyValue) error
}

// DeleteOptions constrain Delete.
type DeleteOptions struct {
	ExpectedRevision int64
	Precondition     func(current KeyValue) error
}

// RevisionMatch says how ListOptions.Revision is applied.
type RevisionMatch string

// Revision match modes, as resourceVersionMatch names them.
const (
	// MatchDefault is the legacy behaviour of a bare resourceVersion: with a
	// limit, an exact read at that revision; without, not older than it.
	MatchDefault RevisionMatch = ""
	// MatchNotOlderThan returns data at least as new as Revision.
	MatchNotOlderThan RevisionMatch = "NotOlderThan"
	// MatchExact returns data at exactly Revision (ErrExpired if compacted).
	MatchExact RevisionMatch = "Exact"
)

// ListOptions select what List returns.
type ListOptions struct {
	// Revision is the resourceVersion the request gave, 0 when none (a
	// consistent read of the latest data). AnyRevision accepts any data.
	Revision int64
	// AnyRevision is resourceVersion="0": serve whatever is at hand.
	AnyRevision bool
	// Match applies Revision.
	Match RevisionMatch
	// Limit caps the number of items returned; 0 means no limit. When items
	// remain, ListResult.Continue resumes after the last one, at the same
	// revision.
	Limit int64
	// Continue is a token from an earlier ListResult. It fixes the revision,
	// so it cannot be combined with Revision.
	Continue string
	// Predicate filters the items; Limit counts only matching items.
	Predicate Predicate
}

// ListResult is one page of a list.
type ListResult struct {
	Items []KeyValue
	// Revision is the revision the whole list was read at.
	Revision int64
	// Continue is empty on the last page.
	Continue string
	// RemainingItemCount estimates the items after this page; nil when it is
	// unknown (a filtered list).
	RemainingItemCount *int64
}

// EventType is the kind of change an Event reports.
type EventType string

// Event types. Bookmark carries only a revision; ErrorEvent carries Err.
const (
	Added      EventType = "ADDED"
	Modified   EventType = "MODIFIED"
	Deleted    EventType = "DELETED"
	Bookmark   EventType = "BOOKMARK"
	ErrorEvent EventType = "ERROR"
)

// Event is one change seen by a watch.
type Event struct {
	Type EventType
	Key  string
	// Value is the object to report: the new value for Added and Modified,
	// the last value before deletion for Deleted (including an object that
	// stopped matching the predicate).
	Value []byte
	// PrevValue is the value before a Modified change, when known.
	PrevValue []byte
	// Revision is the revision of the change (for Bookmark: the revision
	// the watch has seen everything up to).
	Revision int64
	// Memo is the caching layer's scratch space for Value as the event
	// reports it, when it has one. A Deleted event's memo is its own: its
	// Value is the last one but its Revision the delete's, so forms derived
	// from it (stamped with a resourceVersion) differ from those of the
	// value while it lived.
	Memo *Memo
	// Err is set on ErrorEvent events, the last event of a watch.
	Err error
	// InitialEventsEnd marks the bookmark that ends the initial events of a
	// watch with SendInitialEvents.
	InitialEventsEnd bool
}

// WatchOptions select what Watch streams.
//
// A watch from revision R needs the history after R: it ends at once with an
// ErrorEvent carrying ErrExpired when R+1 is older than the compacted
// revision (etcd's rule; a list at R fails when R itself is compacted). A
// watch whose consumer falls too far behind is closed without an event, as
// kube-apiserver's watch cache closes it: its client watches again from the
// last revision it saw (a Kubernetes reflector does so on a closed watch,
// but lists everything again after an error). Watch itself fails with ErrTooLargeResourceVersion when
// SendInitialEvents asks for a revision the store does not reach within a few
// seconds.
type WatchOptions struct {
	// Revision: the watch delivers every change after this revision. Zero
	// starts with the current state, sent as Added events, and continues
	// with later changes (the Kubernetes meaning of an empty or "0"
	// resourceVersion on a watch).
	Revision int64
	// SendInitialEvents sends the current state as Added events, then a
	// Bookmark with InitialEventsEnd at its revision, then the changes
	// after it: a streaming list. Revision, when not zero, is how old that
	// state may not be (resourceVersionMatch=NotOlderThan): the store waits
	// to reach it, and a compacted Revision is no error, since the state
	// sent is the latest. A store sends it from one snapshot, so that
	// changes meanwhile cannot fail it.
	SendInitialEvents bool
	// Bookmarks asks for periodic Bookmark events so that a reconnecting
	// watcher can resume from a recent revision.
	Bookmarks bool
	// Predicate filters events: a change from matching to not matching is
	// reported as Deleted, the reverse as Added.
	Predicate Predicate
}

// Watcher is a running watch.
type Watcher interface {
	// ResultChan delivers events in revision order; it closes when the watch
	// ends.
	ResultChan() <-chan Event
	// Stop ends the watch and closes the channel; it is safe to call twice.
	Stop()
}

// ProgressRequester is implemented by Watchers that report their progress on
// demand. After RequestProgress the watch sends a Bookmark, whether or not
// WatchOptions.Bookmarks asked for them, at a revision at least as new as the
// store's when RequestProgress was called, once it has delivered every event
// up to that revision. One Bookmark may answer several requests, and it may
// come late while events keep flowing (they carry the revision forward).
//
// A watch cache in front of a store uses it to learn that the store's
// revision moved while nothing it watches changed (a write to another
// resource of a shared etcd), so that a consistent read waits for one round
// trip rather than the next periodic bookmark.
type ProgressRequester interface {
	// RequestProgress asks for the Bookmark; it does not wait for it.
	RequestProgress(ctx context.Context) error
}

// ProgressOrderer is implemented by backends whose watches' progress
// reports (Bookmarks, and answers to RequestProgress) can be trusted to
// come after every event up to their revision only on some versions of the
// server behind them: etcd orders its progress notifications with events
// from 3.4.31 and 3.5.13 on (etcd-io/etcd#15220, #17507). A watch cache
// serves consistent reads only when they can be trusted, and hands them to
// the backend otherwise, as kube-apiserver's watch cache does.
type ProgressOrderer interface {
	// ProgressOrdered reports whether the backend's progress reports are
	// known to be ordered with its events. It does not block: it is false
	// until the backend knows.
	ProgressOrdered() bool
}
