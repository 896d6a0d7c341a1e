package registry

import (
	"context"
	"errors"
	"fmt"

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

// Item is an object in a served version as a response carries it.
type Item struct {
	// Object is in the served version and may be shared: read-only.
	Object meta.Object
	stored meta.Object
	memo   *storage.Memo
	key    jsonMemoKey
}

// JSON returns the object's JSON encoding, computed once per stored value
// and version when a cache keeps the value.
func (it Item) JSON() ([]byte, error) {
	if b, ok := it.memo.Load(it.key); ok {
		return b.([]byte), nil
	}
	b, err := EncodeJSON(it.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", it.Object.GetTypeMeta().Kind, err)
	}
	return it.memo.LoadOrStore(it.key, b).([]byte), nil
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

// Conversion converts between a served version V and the storage version S.
// FromStorage must not modify its argument, which may be shared.
type Conversion[S, V meta.Object] struct {
	ToStorage   func(V) (S, error)
	FromStorage func(S) (V, error)
}

// Serve serves a store in its storage version.
func Serve[S meta.Object](st *Store[S]) Resource {
	return &served[S, S]{st: st, version: st.opts.StorageVersion,
		apiVersion: st.storageAPIVersion, key: jsonMemoKey{st.opts.StorageVersion}}
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
	return &served[S, V]{st: st, version: version, conv: &c, vti: ti,
		apiVersion: meta.GroupVersion{Group: st.opts.Resource.Group, Version: version}.String(),
		key:        jsonMemoKey{version}}, nil
}

type served[S, V meta.Object] struct {
	st         *Store[S]
	version    string
	apiVersion string
	conv       *Conversion[S, V] // nil: V is S
	vti        *typeInfo
	key        jsonMemoKey
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

// toServed converts a stored object into the served version, sharing the
// conversion through the memo when there is one.
func (r *served[S, V]) toServed(obj S, memo *storage.Memo) (Item, error) {
	it := Item{stored: obj, memo: memo, key: r.key}
	if r.conv == nil {
		it.Object = obj
		return it, nil
	}
	if v, ok := memo.Load(servedMemoKey{r.version}); ok {
		it.Object = v.(meta.Object)
		return it, nil
	}
	v, err := r.conv.FromStorage(obj)
	if err != nil {
		return it, meta.NewInternalError(fmt.Errorf("converting %s to %s: %w", r.st.opts.Kind, r.apiVersion, err))
	}
	tm := v.GetTypeMeta()
	tm.APIVersion, tm.Kind = r.apiVersion, r.st.opts.Kind
	it.Object = memo.LoadOrStore(servedMemoKey{r.version}, meta.Object(v)).(meta.Object)
	return it, nil
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
	obj, memo, err := r.st.Get(ctx, ns, name, opts)
	if err != nil {
		return Item{}, err
	}
	return r.toServed(obj, memo)
}

func (r *served[S, V]) List(ctx context.Context, ns string, opts meta.ListOptions) (*List, error) {
	res, err := r.st.List(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := &List{Items: make([]Item, 0, len(res.Items)), ResourceVersion: res.ResourceVersion,
		Continue: res.Continue, RemainingItemCount: res.RemainingItemCount}
	for _, e := range res.Items {
		it, err := r.toServed(e.Object, e.Memo)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}

func (r *served[S, V]) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan WatchEvent, error) {
	in, err := r.st.Watch(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	out := make(chan WatchEvent)
	go func() {
		defer close(out)
		for ev := range in {
			we := WatchEvent{Type: ev.Type, Err: ev.Err}
			if ev.Err == nil {
				it, err := r.toServed(ev.Object, ev.Memo)
				if err != nil {
					we = WatchEvent{Type: meta.Error, Err: err}
				} else {
					we.Item = it
				}
			}
			select {
			case out <- we:
			case <-ctx.Done():
				// Drain so the store's goroutine can see ctx and exit.
				for range in {
				}
				return
			}
		}
	}()
	return out, nil
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
	return r.toServed(out, nil)
}

func (r *served[S, V]) Update(ctx context.Context, ns, name string, fn ObjectUpdate, opts UpdateOptions) (Item, bool, error) {
	out, created, err := r.st.Update(ctx, ns, name, func(ctx context.Context, cur S) (S, error) {
		var zero S
		var current meta.Object
		if !isNil(cur) {
			it, err := r.toServed(cur, nil)
			if err != nil {
				return zero, err
			}
			current = it.Object
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
	it, err := r.toServed(out, nil)
	return it, created, err
}

func (r *served[S, V]) Delete(ctx context.Context, ns, name string, opts DeleteOptions) (Item, bool, error) {
	out, deleted, err := r.st.Delete(ctx, ns, name, opts)
	if err != nil {
		return Item{}, false, err
	}
	it, err := r.toServed(out, nil)
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
		it, err := r.toServed(obj, nil)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}

func (r *served[S, V]) Table(ctx context.Context, items []Item, opts meta.TableOptions) (*meta.Table, error) {
	t := &meta.Table{
		TypeMeta:          meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ColumnDefinitions: r.st.tableColumns(),
		Rows:              make([]meta.TableRow, 0, len(items)),
	}
	now := r.st.opts.Now() // the store's clock, the one creationTimestamp came from
	for _, it := range items {
		stored, ok := it.stored.(S)
		if !ok {
			return nil, meta.NewInternalError(fmt.Errorf("table of %s got %T", r.st.opts.Kind, it.stored))
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
			b, err := EncodeJSON(meta.PartialObjectMetadata{
				TypeMeta:   meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
				ObjectMeta: *it.Object.GetObjectMeta(),
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
