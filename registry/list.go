package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// Entry is one object read from storage together with the memo a cache keeps
// for it (nil without a cache).
type Entry[T meta.Object] struct {
	Object T
	Memo   *storage.Memo
}

// ListResult is one page of objects.
type ListResult[T meta.Object] struct {
	Items              []Entry[T]
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64
}

// predicate builds the storage predicate for the options' selectors.
func (s *Store[T]) predicate(opts meta.ListOptions) (storage.Predicate, error) {
	var p storage.Predicate
	if opts.LabelSelector != "" {
		sel, err := meta.ParseLabelSelector(opts.LabelSelector)
		if err != nil {
			// The parser already words its errors as Kubernetes does.
			return p, meta.NewBadRequest(err.Error())
		}
		p.Label = sel
	}
	if opts.FieldSelector != "" {
		sel, err := meta.ParseFieldSelector(opts.FieldSelector)
		if err != nil {
			return p, meta.NewBadRequest(err.Error())
		}
		// Like kube-apiserver, refuse a field the resource cannot select
		// on rather than match nothing (or everything, with "!=").
		if s.fieldLabels != nil {
			for _, f := range meta.SelectorFields(sel) {
				if !s.fieldLabels[f] {
					return p, meta.NewBadRequest(unknownFieldLabel(s.opts.Fields == nil, f))
				}
			}
		}
		p.Field = sel
	}
	if !p.Empty() {
		p.GetAttrs = s.attrs
		p.AttrsKey = s.attrsKey
	}
	return p, nil
}

// metadataOnly decodes only what default selectors need: a fraction of the
// cost of decoding the whole object.
type metadataOnly struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
}

// attrs extracts the labels and selectable fields of a stored value.
func (s *Store[T]) attrs(value []byte) (meta.Set, meta.Set, error) {
	if s.opts.Fields != nil {
		obj, err := s.decodeFresh(value, 0)
		if err != nil {
			return nil, nil, err
		}
		m := obj.GetObjectMeta()
		fields := meta.Set{"metadata.name": m.Name}
		if s.opts.NamespaceScoped {
			fields["metadata.namespace"] = m.Namespace
		}
		for k, v := range s.opts.Fields(obj) {
			fields[k] = v
		}
		return m.Labels, fields, nil
	}
	var mo metadataOnly
	if err := json.Unmarshal(value, &mo); err != nil {
		return nil, nil, fmt.Errorf("decoding metadata of stored %s: %w", s.opts.Resource, err)
	}
	fields := meta.Set{"metadata.name": mo.Metadata.Name}
	if s.opts.NamespaceScoped {
		fields["metadata.namespace"] = mo.Metadata.Namespace
	}
	return mo.Metadata.Labels, fields, nil
}

// storageListOptions maps Kubernetes list options to storage options.
func (s *Store[T]) storageListOptions(opts meta.ListOptions) (storage.ListOptions, error) {
	so := storage.ListOptions{Limit: opts.Limit, Continue: opts.Continue}
	if opts.Continue != "" && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return so, meta.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	switch opts.ResourceVersion {
	case "":
	case "0":
		so.AnyRevision = true
	default:
		n, err := parseResourceVersion(opts.ResourceVersion)
		if err != nil {
			return so, err
		}
		so.Revision = n
	}
	switch opts.ResourceVersionMatch {
	case meta.ResourceVersionMatchExact:
		so.Match = storage.MatchExact
	case meta.ResourceVersionMatchNotOlderThan:
		so.Match = storage.MatchNotOlderThan
	}
	p, err := s.predicate(opts)
	if err != nil {
		return so, err
	}
	so.Predicate = p
	return so, nil
}

// List returns the objects in namespace ns ("" for all) matching opts. The
// objects may be shared: do not modify them.
func (s *Store[T]) List(ctx context.Context, ns string, opts meta.ListOptions) (*ListResult[T], error) {
	res, err := s.listKV(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := &ListResult[T]{
		Items:              make([]Entry[T], 0, len(res.Items)),
		ResourceVersion:    strconv.FormatInt(res.Revision, 10),
		Continue:           res.Continue,
		RemainingItemCount: res.RemainingItemCount,
	}
	for _, kv := range res.Items {
		obj, err := s.decodeStored(kv)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, Entry[T]{Object: obj, Memo: kv.Memo})
	}
	return out, nil
}

// listKV lists the stored values List decodes.
func (s *Store[T]) listKV(ctx context.Context, ns string, opts meta.ListOptions) (storage.ListResult, error) {
	so, err := s.storageListOptions(opts)
	if err != nil {
		return storage.ListResult{}, err
	}
	res, err := s.opts.Storage.List(ctx, s.prefix(ns), so)
	if err != nil {
		if errors.Is(err, storage.ErrExpired) {
			if opts.Continue != "" {
				return res, continueExpired(err)
			}
			// kube-apiserver's words for a list at a compacted revision.
			return res, meta.NewResourceExpired("The resourceVersion for the provided list is too old.")
		}
		return res, s.storageError(err, "")
	}
	return res, nil
}

// continueExpired is the 410 of a continued list whose revision is gone,
// as kube-apiserver answers it: with the storage's "inconsistent continue"
// token in metadata.continue when it made one.
func continueExpired(err error) error {
	var e *storage.Error
	if errors.As(err, &e) && e.Continue != "" {
		st := meta.NewResourceExpired(e.Message)
		st.ErrStatus.Continue = e.Continue
		return st
	}
	return meta.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
}

// Event is one change to a watched object.
type Event[T meta.Object] struct {
	Type meta.EventType
	// Object is the object after the change (before it, for Deleted); for
	// Bookmark only its resourceVersion (and annotations) are set.
	Object T
	Memo   *storage.Memo
	// Err is set on Error events: a Status error.
	Err error
}

// Watch streams changes to objects in ns ("" for all) matching opts. The
// channel closes when ctx ends or after an Error event.
func (s *Store[T]) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan Event[T], error) {
	return watchStore(ctx, s, ns, opts, s.convertEvent)
}

// WatchSeq is Watch read without a goroutine of the watch's own: the
// events come as the caller ranges over the sequence, which it must do
// once (the storage watch is stopped when the range ends: at an Error
// event, when ctx ends, or when the caller stops). An informer reads its
// watch so; a goroutine per watch would be parked per resource followed.
func (s *Store[T]) WatchSeq(ctx context.Context, ns string, opts meta.ListOptions) (iter.Seq[Event[T]], error) {
	return watchStoreSeq(ctx, s, ns, opts, s.convertEvent)
}

// watchStore starts the storage watch opts ask for and streams its events,
// each through convert (ok false: the watch ends after that event), from
// one goroutine. The channel closes when ctx ends or the watch does.
func watchStore[T meta.Object, E any](ctx context.Context, s *Store[T], ns string, opts meta.ListOptions, convert func(storage.Event) (E, bool)) (<-chan E, error) {
	seq, err := watchStoreSeq(ctx, s, ns, opts, convert)
	if err != nil {
		return nil, err
	}
	out := make(chan E)
	go func() {
		defer close(out)
		for e := range seq {
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// watchStoreSeq starts the storage watch opts ask for; its events, each
// through convert, come as the caller ranges over the sequence, once. The
// storage watch is stopped when the range ends: after an event convert
// marks last, when ctx ends or the watch does, or when the caller stops.
func watchStoreSeq[T meta.Object, E any](ctx context.Context, s *Store[T], ns string, opts meta.ListOptions, convert func(storage.Event) (E, bool)) (iter.Seq[E], error) {
	wo := storage.WatchOptions{Bookmarks: opts.AllowWatchBookmarks}
	switch opts.ResourceVersion {
	case "", "0":
		if opts.SendInitialEvents != nil && !*opts.SendInitialEvents {
			// An explicit sendInitialEvents=false asks to start at the
			// most recent (or any) revision without the current state,
			// as kube-apiserver's watch cache reads it; only an absent
			// sendInitialEvents keeps the legacy synthetic ADDED events.
			rev, err := s.opts.Storage.CurrentRevision(ctx)
			if err != nil {
				return nil, s.storageError(err, "")
			}
			wo.Revision = rev
		}
	default:
		n, err := parseResourceVersion(opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		wo.Revision = n
	}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		wo.SendInitialEvents = true
	}
	p, err := s.predicate(opts)
	if err != nil {
		return nil, err
	}
	wo.Predicate = p
	w, err := s.opts.Storage.Watch(ctx, s.prefix(ns), wo)
	if err != nil {
		return nil, s.storageError(err, "")
	}
	return func(yield func(E) bool) {
		defer w.Stop()
		for {
			var ev storage.Event
			var ok bool
			select {
			case ev, ok = <-w.ResultChan():
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			}
			e, ok := convert(ev)
			if !yield(e) || !ok {
				return
			}
		}
	}, nil
}

// eventType is the watch event type of a change.
func eventType(t storage.EventType) meta.EventType {
	switch t {
	case storage.Modified:
		return meta.Modified
	case storage.Deleted:
		return meta.Deleted
	}
	return meta.Added
}

// bookmark is the object of a bookmark event: empty but for its
// resourceVersion (and the annotation that ends the initial events).
func (s *Store[T]) bookmark(ev storage.Event) T {
	obj := s.ti.newObject().(T)
	tm := obj.GetTypeMeta()
	tm.APIVersion, tm.Kind = s.storageAPIVersion, s.opts.Kind
	m := obj.GetObjectMeta()
	m.ResourceVersion = strconv.FormatInt(ev.Revision, 10)
	if ev.InitialEventsEnd {
		m.Annotations = map[string]string{meta.InitialEventsAnnotation: "true"}
	}
	return obj
}

// convertEvent decodes a storage event; ok is false when the watch must end.
func (s *Store[T]) convertEvent(ev storage.Event) (Event[T], bool) {
	switch ev.Type {
	case storage.ErrorEvent:
		return Event[T]{Type: meta.Error, Err: s.storageError(ev.Err, "")}, false
	case storage.Bookmark:
		return Event[T]{Type: meta.Bookmark, Object: s.bookmark(ev)}, true
	}
	// A Deleted event's value is the last one before the delete, but the
	// object must carry the delete's revision (so a watch resumed from it
	// does not see the delete again): its memo is the event's own, not
	// the value's (see storage.Event.Memo).
	kv := storage.KeyValue{Key: ev.Key, Value: ev.Value, Revision: ev.Revision, Memo: ev.Memo}
	obj, err := s.decodeStored(kv)
	if err != nil {
		return Event[T]{Type: meta.Error, Err: err}, false
	}
	return Event[T]{Type: eventType(ev.Type), Object: obj, Memo: kv.Memo}, true
}

// unknownFieldLabel words a field selector's unknown field as
// kube-apiserver does: its default conversion (kinds that select on
// metadata only, as configmaps) names the two fields there are; kinds with
// fields of their own (secrets, namespaces, custom resources) say only
// that the field is not supported.
func unknownFieldLabel(metadataOnly bool, field string) string {
	if metadataOnly {
		return fmt.Sprintf("%q is not a known field selector: only %q, %q", field, "metadata.name", "metadata.namespace")
	}
	return "field label not supported: " + field
}
