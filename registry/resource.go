package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"unique"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// ResourceInfo describes a served resource for routing, discovery and OpenAPI.
type ResourceInfo struct {
	GroupVersion      meta.GroupVersion
	Resource          string
	SingularName      string
	Kind              string
	ShortNames        []string
	Categories        []string
	NamespaceScoped   bool
	StatusSubresource bool
	// DeleteStatus is Options.DeleteStatus: the handler answers a delete
	// that removed the object with a Status.
	DeleteStatus bool
	// Verbs are the verbs the resource serves, in discovery order; the
	// server installs routes for these only.
	Verbs []string
}

// StandardVerbs are the verbs of a stored resource.
var StandardVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// Serves reports whether the resource serves verb.
func (i ResourceInfo) Serves(verb string) bool {
	for _, v := range i.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// Item is an object in a served version as a response carries it. An item
// read from storage is lazy: it holds the stored value and decodes it only
// when something needs the Go object (Object, a Table); its JSON in the
// storage version is made from the stored bytes without decoding them (see
// Store's storedJSON), and every derived form is kept in the value's memo.
type Item struct {
	// object and stored are an eager item's object in the served and in
	// the storage version.
	object, stored meta.Object
	// kv and src are a lazy item's stored value (its memo never nil) and
	// the resource that decodes it.
	kv  *storage.KeyValue
	src itemSource
}

// itemSource decodes and encodes the stored values of lazy items.
type itemSource interface {
	// decode returns the value's object in the served and in the storage
	// version, shared through the value's memo: read-only.
	decode(kv *storage.KeyValue) (served, stored meta.Object, err error)
	// json returns the value's JSON in the served version, memoized:
	// read-only.
	json(kv *storage.KeyValue) (*servedJSON, error)
}

// servedJSON is what a value's memo keeps of its JSON in a served version:
// the encoding, or, when it is the stored bytes around the resourceVersion
// (at >= 0), the resourceVersion's part alone: the parts are made from
// the value's stored bytes at each read (a few slice headers), not kept,
// 72 bytes less per value the watch cache holds. typeLen is how many
// leading bytes of the first part are `{"kind":..,"apiVersion":..,` as
// that version writes them (0: they do not lead it). It is found once per
// value, when the JSON is made, so that a LIST leaving them out of its
// items need not read every item's bytes to know: in a server's LIST of
// 5,000 Flunders that read was one cache miss per item, 12% of the LIST's
// CPU.
type servedJSON struct {
	json    []byte
	at      int32 // where json goes in the stored bytes; -1: json is all
	typeLen int32
}

// parts returns the JSON in parts, around stored (the value's stored
// bytes) when it was spliced into them.
func (j *servedJSON) parts(stored []byte) JSONParts {
	if j.at < 0 {
		return JSONParts{j.json}
	}
	// Full slice expressions: appending to a part must never write into
	// the stored bytes.
	return JSONParts{stored[:j.at:j.at], j.json, stored[j.at:len(stored):len(stored)]}
}

// NewItem returns an item of an object that was not read from storage (a
// computed resource's answer, say). obj must not be modified afterwards.
func NewItem(obj meta.Object) Item { return Item{object: obj, stored: obj} }

// Object returns the object in the served version, decoding a lazy item's
// stored value on first use. It may be shared: read-only.
func (it Item) Object() (meta.Object, error) {
	if it.src == nil {
		return it.object, nil
	}
	obj, _, err := it.src.decode(it.kv)
	return obj, err
}

// storedObject returns the object in the storage version.
func (it Item) storedObject() (meta.Object, error) {
	if it.src == nil {
		return it.stored, nil
	}
	_, obj, err := it.src.decode(it.kv)
	return obj, err
}

// JSON returns the object's JSON encoding, computed once per stored value
// and version when the item was read from storage. It may be shared:
// read-only.
func (it Item) JSON() ([]byte, error) {
	p, err := it.JSONParts()
	return p.Bytes(), err
}

// JSONPartsTyped is JSONParts, and says how many leading bytes of the
// first part are the object's opening brace, kind and apiVersion as its
// served version writes them first (`{"kind":..,"apiVersion":..,`), for
// a typed list, whose items leave them out (as kube-apiserver's do): 0
// when they do not lead it, or an item not read from storage does not
// know.
func (it Item) JSONPartsTyped() (p JSONParts, typeLen int, err error) {
	if it.src != nil {
		j, err := it.src.json(it.kv)
		if err != nil {
			return JSONParts{}, 0, err
		}
		return j.parts(it.kv.Value), int(j.typeLen), nil
	}
	p, err = it.JSONParts()
	return p, 0, err
}

// JSONParts returns the object's JSON encoding in parts that share the
// stored bytes where they can: JSON without assembling it, for a response
// that copies it anyway (a list).
func (it Item) JSONParts() (JSONParts, error) {
	if it.src != nil {
		j, err := it.src.json(it.kv)
		if err != nil {
			return JSONParts{}, err
		}
		return j.parts(it.kv.Value), nil
	}
	b, err := EncodeJSON(it.object)
	if err != nil {
		return JSONParts{}, fmt.Errorf("encoding %s: %w", it.object.GetTypeMeta().Kind, err)
	}
	return JSONParts{b}, nil
}

// Stored returns a lazy item's stored value, shared and read-only, and its
// revision: the object in the storage version as JSON without its
// resourceVersion, which is the revision. ok is false for an item not read
// from storage (NewItem's, a bookmark's). It is for a reader of the
// metadata alone, which is the same in every served version (the garbage
// collector): it reads them without decoding the object or having its JSON
// made, which the value's memo would keep for as long as it is cached.
func (it Item) Stored() (value []byte, revision int64, ok bool) {
	if it.src == nil {
		return nil, 0, false
	}
	return it.kv.Value, it.kv.Revision, true
}

// List is one page of a list in a served version.
type List struct {
	Items              []Item
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64
}

// WatchEvent is one change in a served version.
type WatchEvent struct {
	Type meta.EventType
	Item Item
	// Err is set for Error events: a Status error.
	Err error
}

// ObjectUpdate returns the updated object given a private copy of the current
// one in the served version (nil when creating on update).
type ObjectUpdate func(ctx context.Context, current meta.Object) (meta.Object, error)

// Resource is one resource in one served version: what the server installs
// and its REST handlers call.
type Resource interface {
	Info() ResourceInfo
	// New returns an empty object of the served version, for decoding.
	New() meta.Object
	Get(ctx context.Context, ns, name string, opts meta.GetOptions) (Item, error)
	List(ctx context.Context, ns string, opts meta.ListOptions) (*List, error)
	Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan WatchEvent, error)
	Create(ctx context.Context, ns string, obj meta.Object, opts WriteOptions) (Item, error)
	Update(ctx context.Context, ns, name string, fn ObjectUpdate, opts UpdateOptions) (Item, bool, error)
	Delete(ctx context.Context, ns, name string, opts DeleteOptions) (Item, bool, error)
	DeleteCollection(ctx context.Context, ns string, listOpts meta.ListOptions, opts DeleteOptions) (*List, error)
	// Table renders items (of this resource) as a server-side Table.
	Table(ctx context.Context, items []Item, opts meta.TableOptions) (*meta.Table, error)
}

// Defaulting is implemented by a Resource whose objects have defaults (its
// strategy is a Defaulter): the REST handlers apply them to a write's body
// as they decode it, as kube-apiserver's decoder does, so that the field
// manager records the fields the defaults set as the writer's (a Secret's
// type and the data its stringData became, a Namespace's
// kubernetes.io/metadata.name label). The store applies them again before
// admission; a Defaulter is idempotent.
type Defaulting interface {
	// Default applies the defaults to obj, an object of the served
	// version (from New).
	Default(obj meta.Object)
}

// VersionConverter is implemented by a Resource served in a version other
// than its storage version: admission shows plugins the object in the
// requested version too (admission.Attributes.VersionedObject).
type VersionConverter interface {
	// ToServed converts an object of the storage version to the served one.
	ToServed(stored meta.Object) (meta.Object, error)
}

// StorageConverter is implemented by every served Resource: it converts an
// object of the served version to the storage version, so that, with
// VersionConverter, an object moves between any two served versions
// (server-side apply compares field sets recorded in other versions so).
type StorageConverter interface {
	ToStorage(served meta.Object) (meta.Object, error)
}

// Conversion converts between a served version V and the storage version S.
// FromStorage must not modify its argument, which may be shared.
type Conversion[S, V meta.Object] struct {
	ToStorage   func(V) (S, error)
	FromStorage func(S) (V, error)
	// Epoch tells this conversion's results apart from another's of the
	// same version in the memos of stored values, which the storage's
	// cache shares between stores: a CRD whose schema changed serves its
	// objects through a new conversion (new defaults), which must not be
	// given what the old one left there.
	Epoch string
}

// Serve serves a store in its storage version.
func Serve[S meta.Object](st *Store[S]) Resource {
	return &served[S, S]{st: st, version: st.opts.StorageVersion,
		apiVersion: st.storageAPIVersion, key: unique.Make(jsonMemoKey{apiVersion: st.storageAPIVersion}),
		typeFields: typeFields(st.opts.Kind, st.storageAPIVersion)}
}

// ServeVersion serves a store in another version, converting with c.
func ServeVersion[S, V meta.Object](st *Store[S], version string, c Conversion[S, V]) (Resource, error) {
	if c.ToStorage == nil || c.FromStorage == nil {
		return nil, errors.New("registry: a Conversion needs ToStorage and FromStorage")
	}
	ti, err := newTypeInfo[V]()
	if err != nil {
		return nil, err
	}
	apiVersion := meta.GroupVersion{Group: st.opts.Resource.Group, Version: version}.String()
	return &served[S, V]{st: st, version: version, conv: &c, vti: ti,
		apiVersion: apiVersion, key: unique.Make(jsonMemoKey{apiVersion, c.Epoch}),
		servedKey:  unique.Make(servedMemoKey{apiVersion, c.Epoch}),
		typeFields: typeFields(st.opts.Kind, apiVersion)}, nil
}

type served[S, V meta.Object] struct {
	st         *Store[S]
	version    string
	apiVersion string
	conv       *Conversion[S, V] // nil: V is S
	vti        *typeInfo
	// key and servedKey are the memo keys of the version's JSON and of
	// its converted object (see codec.go).
	key       unique.Handle[jsonMemoKey]
	servedKey unique.Handle[servedMemoKey]
	// typeFields is how the version's JSON of an object begins:
	// `{"kind":..,"apiVersion":..,`.
	typeFields []byte
}

// typeFields returns how the JSON of an object of kind in apiVersion
// begins, TypeMeta's fields first.
func typeFields(kind, apiVersion string) []byte {
	b := append([]byte(`{"kind":`), strconv.Quote(kind)...)
	b = append(append(b, `,"apiVersion":`...), strconv.Quote(apiVersion)...)
	return append(b, ',')
}

// ToServed implements VersionConverter.
func (r *served[S, V]) ToServed(stored meta.Object) (meta.Object, error) {
	s, ok := stored.(S)
	if !ok {
		return nil, fmt.Errorf("object of type %T is not a %s", stored, r.st.opts.Kind)
	}
	return r.toServed(s, nil)
}

// ToStorage implements StorageConverter.
func (r *served[S, V]) ToStorage(obj meta.Object) (meta.Object, error) {
	return r.toStorage(obj)
}

func (r *served[S, V]) Info() ResourceInfo {
	o := r.st.opts
	return ResourceInfo{
		GroupVersion:      meta.GroupVersion{Group: o.Resource.Group, Version: r.version},
		Resource:          o.Resource.Resource,
		SingularName:      o.SingularName,
		Kind:              o.Kind,
		ShortNames:        o.ShortNames,
		Categories:        o.Categories,
		NamespaceScoped:   o.NamespaceScoped,
		StatusSubresource: o.StatusSubresource,
		DeleteStatus:      o.DeleteStatus,
		Verbs:             StandardVerbs,
	}
}

func (r *served[S, V]) New() meta.Object {
	var obj meta.Object
	if r.conv == nil {
		obj = r.st.ti.newObject().(meta.Object)
	} else {
		obj = r.vti.newObject().(meta.Object)
	}
	return obj
}

// Default implements Defaulting. A version other than the storage version
// gets its defaults when the store converts it, after the field manager, as
// before: its strategy's defaults are of the storage type.
func (r *served[S, V]) Default(obj meta.Object) {
	if r.conv != nil {
		return
	}
	if o, ok := obj.(S); ok {
		r.st.setDefaults(o)
	}
}

// toServed converts a stored object into the served version, sharing the
// conversion through the memo when there is one.
func (r *served[S, V]) toServed(obj S, memo *storage.Memo) (meta.Object, error) {
	if r.conv == nil {
		return obj, nil
	}
	if v, ok := memo.Load(r.servedKey); ok {
		return v.(meta.Object), nil
	}
	v, err := r.conv.FromStorage(obj)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("converting %s to %s: %w", r.st.opts.Kind, r.apiVersion, err))
	}
	tm := v.GetTypeMeta()
	tm.APIVersion, tm.Kind = r.apiVersion, r.st.opts.Kind
	return memo.LoadOrStore(r.servedKey, meta.Object(v)).(meta.Object), nil
}

// eager returns the item of an object the store just wrote or computed.
func (r *served[S, V]) eager(obj S) (Item, error) {
	v, err := r.toServed(obj, nil)
	if err != nil {
		return Item{}, err
	}
	return Item{object: v, stored: obj}, nil
}

// lazy returns the item of a stored value, giving it a memo of its own
// when the backend keeps none, so that what the item derives is derived
// once.
func (r *served[S, V]) lazy(kv *storage.KeyValue) Item {
	if kv.Memo == nil {
		kv.Memo = storage.NewMemo()
	}
	return Item{kv: kv, src: r}
}

func (r *served[S, V]) decode(kv *storage.KeyValue) (meta.Object, meta.Object, error) {
	stored, err := r.st.decodeStored(*kv)
	if err != nil {
		return nil, nil, err
	}
	v, err := r.toServed(stored, kv.Memo)
	return v, stored, err
}

func (r *served[S, V]) json(kv *storage.KeyValue) (*servedJSON, error) {
	if j, ok := kv.Memo.Load(r.key); ok {
		return j.(*servedJSON), nil
	}
	var p JSONParts
	spliced := false
	if r.conv == nil {
		// The stored bytes around the resourceVersion, not a copy:
		// the cache keeps the stored value anyway, and a copy beside
		// it was the largest part of a cached object's memory (RSS
		// with the load benchmark's 5,000 Flunders 80 -> 74 MiB; a
		// LIST writes three pieces per item instead of one, whose CPU
		// the benchmark's A/B did not tell apart: docs/benchmarks.md).
		p, spliced = r.st.storedJSON(kv.Value, kv.Revision)
	}
	if p[0] == nil {
		obj, err := r.encodable(kv)
		if err != nil {
			return nil, err
		}
		b, err := EncodeJSON(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", r.st.opts.Kind, err)
		}
		// An object the conversion left as stored, served in the
		// storage version (a custom resource its schema's defaults do
		// not change), encodes as the stored bytes around its
		// resourceVersion: the memo keeps those, not a copy. Its LIST
		// writes three pieces, which custom resources' LIST ratio
		// affords, and their RSS needs.
		p = JSONParts{b}
		if s, ok := r.st.splice(kv.Value, kv.Revision); r.conv != nil && ok && s.equal(b) {
			p, spliced = s, true
		}
	}
	j := servedJSON{json: p[0], at: -1}
	if spliced && len(p[0]) <= math.MaxInt32 {
		j.json, j.at = p[1], int32(len(p[0]))
	} else if spliced {
		j.json = p.Bytes()
	}
	if bytes.HasPrefix(p[0], r.typeFields) {
		j.typeLen = int32(len(r.typeFields))
	}
	// Stored in its entry's allocation: a LIST reads it for every item.
	return storage.MemoLoadOrStore(kv.Memo, r.key, j), nil
}

// encodable returns the value's object in the served version for json to
// encode: the memo's when something decoded the value already, else a
// private one the memo does not keep. Most cached values are only ever
// encoded (a GET, a LIST, a watch event): kept, their decoded and
// converted objects would stay beside the JSON and the stored bytes for
// as long as the value is cached, most of a cached custom resource's
// memory. What needs the object (a Table, admission, an update) decodes
// it then, once, into the memo.
func (r *served[S, V]) encodable(kv *storage.KeyValue) (meta.Object, error) {
	if _, ok := kv.Memo.Load(r.st.decodedKey()); ok {
		obj, _, err := r.decode(kv)
		return obj, err
	}
	stored, err := r.st.decodeFresh(kv.Value, kv.Revision)
	if err != nil {
		return nil, err
	}
	return r.toServed(stored, nil)
}

func (r *served[S, V]) toStorage(obj meta.Object) (S, error) {
	var zero S
	if r.conv == nil {
		s, ok := obj.(S)
		if !ok {
			return zero, meta.NewInternalError(fmt.Errorf("object of type %T is not a %s", obj, r.st.opts.Kind))
		}
		return s, nil
	}
	v, ok := obj.(V)
	if !ok {
		return zero, meta.NewInternalError(fmt.Errorf("object of type %T is not a %s", obj, r.st.opts.Kind))
	}
	s, err := r.conv.ToStorage(v)
	if err != nil {
		return zero, meta.NewBadRequest(fmt.Sprintf("converting %s from %s: %v", r.st.opts.Kind, r.apiVersion, err))
	}
	return s, nil
}

func (r *served[S, V]) Get(ctx context.Context, ns, name string, opts meta.GetOptions) (Item, error) {
	kv, err := r.st.getKV(ctx, ns, name, opts)
	if err != nil {
		return Item{}, err
	}
	return r.lazy(&kv), nil
}

func (r *served[S, V]) List(ctx context.Context, ns string, opts meta.ListOptions) (*List, error) {
	res, err := r.st.listKV(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := &List{Items: make([]Item, len(res.Items)), ResourceVersion: strconv.FormatInt(res.Revision, 10),
		Continue: res.Continue, RemainingItemCount: res.RemainingItemCount}
	for i := range res.Items {
		out.Items[i] = r.lazy(&res.Items[i])
	}
	return out, nil
}

func (r *served[S, V]) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan WatchEvent, error) {
	return watchStore(ctx, r.st, ns, opts, r.convertEvent)
}

// WatchSeq implements SeqWatcher.
func (r *served[S, V]) WatchSeq(ctx context.Context, ns string, opts meta.ListOptions) (iter.Seq[WatchEvent], error) {
	return watchStoreSeq(ctx, r.st, ns, opts, r.convertEvent)
}

// SeqWatcher is a Resource whose watch can be read without a goroutine of
// its own (the Resources Serve makes): WatchSeq is Watch, its events coming
// as the caller ranges over the sequence, which it must do once (the watch
// ends when the range does). An informer reads its watch so; a goroutine
// per watch would be parked per resource followed.
type SeqWatcher interface {
	WatchSeq(ctx context.Context, ns string, opts meta.ListOptions) (iter.Seq[WatchEvent], error)
}

// convertEvent turns a storage event into a served one; ok is false when
// the watch must end.
func (r *served[S, V]) convertEvent(ev storage.Event) (WatchEvent, bool) {
	switch ev.Type {
	case storage.ErrorEvent:
		return WatchEvent{Type: meta.Error, Err: r.st.storageError(ev.Err, "")}, false
	case storage.Bookmark:
		it, err := r.eager(r.st.bookmark(ev))
		if err != nil {
			return WatchEvent{Type: meta.Error, Err: err}, false
		}
		return WatchEvent{Type: meta.Bookmark, Item: it}, true
	}
	// A Deleted event's value is the last one before the delete, but the
	// object must carry the delete's revision (so a watch resumed from it
	// does not see the delete again): its memo is the event's own, not
	// the value's (see storage.Event.Memo).
	kv := &storage.KeyValue{Key: ev.Key, Value: ev.Value, Revision: ev.Revision, Memo: ev.Memo}
	return WatchEvent{Type: eventType(ev.Type), Item: r.lazy(kv)}, true
}

func (r *served[S, V]) Create(ctx context.Context, ns string, obj meta.Object, opts WriteOptions) (Item, error) {
	s, err := r.toStorage(obj)
	if err != nil {
		return Item{}, err
	}
	out, err := r.st.Create(ctx, ns, s, opts)
	if err != nil {
		return Item{}, err
	}
	return r.eager(out)
}

func (r *served[S, V]) Update(ctx context.Context, ns, name string, fn ObjectUpdate, opts UpdateOptions) (Item, bool, error) {
	out, created, err := r.st.Update(ctx, ns, name, func(ctx context.Context, cur S) (S, error) {
		var zero S
		var current meta.Object
		if !isNil(cur) {
			v, err := r.toServed(cur, nil)
			if err != nil {
				return zero, err
			}
			current = v
		}
		next, err := fn(ctx, current)
		if err != nil {
			return zero, err
		}
		return r.toStorage(next)
	}, opts)
	if err != nil {
		return Item{}, false, err
	}
	it, err := r.eager(out)
	return it, created, err
}

func (r *served[S, V]) Delete(ctx context.Context, ns, name string, opts DeleteOptions) (Item, bool, error) {
	out, deleted, err := r.st.Delete(ctx, ns, name, opts)
	if err != nil {
		return Item{}, false, err
	}
	it, err := r.eager(out)
	return it, deleted, err
}

func (r *served[S, V]) DeleteCollection(ctx context.Context, ns string, listOpts meta.ListOptions, opts DeleteOptions) (*List, error) {
	listOpts.Limit, listOpts.Continue = 0, ""
	res, err := r.st.List(ctx, ns, listOpts)
	if err != nil {
		return nil, err
	}
	out := &List{ResourceVersion: res.ResourceVersion}
	for _, e := range res.Items {
		m := e.Object.GetObjectMeta()
		o := opts
		uid := m.UID
		// Never delete a namesake created after the list was read.
		o.Preconditions = &meta.Preconditions{UID: &uid}
		obj, _, err := r.st.Delete(ctx, m.Namespace, m.Name, o)
		if meta.IsNotFound(err) || meta.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		it, err := r.eager(obj)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}

func (r *served[S, V]) Table(ctx context.Context, items []Item, opts meta.TableOptions) (*meta.Table, error) {
	t := &meta.Table{
		TypeMeta: meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		Rows:     make([]meta.TableRow, 0, len(items)),
	}
	if !opts.NoHeaders {
		t.ColumnDefinitions = r.st.tableColumns()
	}
	now := r.st.opts.Now() // the store's clock, the one creationTimestamp came from
	for _, it := range items {
		so, err := it.storedObject()
		if err != nil {
			return nil, err
		}
		stored, ok := so.(S)
		if !ok {
			return nil, meta.NewInternalError(fmt.Errorf("table of %s got %T", r.st.opts.Kind, so))
		}
		row := meta.TableRow{Cells: r.st.tableCells(stored, now)}
		switch opts.IncludeObject {
		case meta.IncludeObject:
			b, err := it.JSON()
			if err != nil {
				return nil, err
			}
			row.Object = b
		case meta.IncludeNone:
		default:
			obj, err := it.Object()
			if err != nil {
				return nil, err
			}
			b, err := EncodeJSON(meta.PartialObjectMetadata{
				TypeMeta:   meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
				ObjectMeta: *obj.GetObjectMeta(),
			})
			if err != nil {
				return nil, err
			}
			row.Object = b
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// ServeProtobuf is Serve for a resource that also accepts writes in
// Kubernetes' protobuf encoding, as kubectl's typed clients post built-in
// kinds: decode turns such a body into JSON (see ProtobufDecoder).
func ServeProtobuf[S meta.Object](st *Store[S], decode func(body []byte) ([]byte, error)) Resource {
	return &servedProtobuf[S, S]{served: Serve(st).(*served[S, S]), decode: decode}
}

// ServeVersionProtobuf is ServeVersion for a resource that also accepts
// writes in protobuf, decode reading the served version's message (as
// events.k8s.io/v1 Events are posted by client-go's event recorders).
func ServeVersionProtobuf[S, V meta.Object](st *Store[S], version string, c Conversion[S, V], decode func(body []byte) ([]byte, error)) (Resource, error) {
	r, err := ServeVersion(st, version, c)
	if err != nil {
		return nil, err
	}
	return &servedProtobuf[S, V]{served: r.(*served[S, V]), decode: decode}, nil
}

type servedProtobuf[S, V meta.Object] struct {
	*served[S, V]
	decode func(body []byte) ([]byte, error)
}

// ProtobufToJSON implements ProtobufDecoder; a body it cannot read is a
// 400, as kube-apiserver answers an undecodable one.
func (r *servedProtobuf[S, V]) ProtobufToJSON(body []byte) ([]byte, error) {
	b, err := r.decode(body)
	if err != nil {
		return nil, meta.NewBadRequest(err.Error())
	}
	return b, nil
}
