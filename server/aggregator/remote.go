package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// ControllerUser is who the control plane's own controllers (the
// namespace controller and the garbage collector) are to the backends of
// remote APIServices: kube-controller-manager's name, so that a
// backend's audit log says who deleted, in system:masters, as the front
// server's loopback identity is, since those controllers run inside it
// with its privileges. Backends authorize it as any proxied user: they
// trust the front-proxy certificate's X-Remote-* headers and ask the front
// server's authorizer (--authorization-kubeconfig).
var ControllerUser = &authn.User{Name: "system:kube-controller-manager", Groups: []string{authn.SystemPrivilegedGroup, "system:authenticated"}}

// RemoteResources returns the resources of the remote APIServices, one
// registry.Resource per resource of each group-version whose backend is
// available, read from the discovery document the availability
// controller fetched, groups and versions in discovery's priority order
// (so the first of a group and resource is its preferred version's). Each
// reads and writes through the backend as ControllerUser, with the
// aggregator's front-proxy certificate, as a proxied request does; it
// holds no state of its own, so it keeps working across changes of its
// APIService's backend. The error names the remote group-versions left
// out because they are unavailable, in the words of client-go's
// discovery (kube-controller-manager's controllers take discovery from
// it): "unable to retrieve the complete list of server APIs:
// <gv>: stale GroupVersion discovery: <gv>".
func (a *Aggregator) RemoteResources() ([]registry.Resource, error) {
	var out []registry.Resource
	var failed []string
	for _, g := range sortedGroups(a.entries()) {
		for _, v := range g.versions {
			if !v.remote {
				continue
			}
			a.mu.RLock()
			doc := a.docs[v.name]
			a.mu.RUnlock()
			if !v.available || doc == nil {
				failed = append(failed, fmt.Sprintf("%s: stale GroupVersion discovery: %s", v.gv, v.gv))
				continue
			}
			for _, r := range doc.list.APIResources {
				if strings.Contains(r.Name, "/") {
					continue // a subresource
				}
				out = append(out, &remoteResource{a: a, apiService: v.name, info: remoteInfo(v.gv, r, doc.list)})
			}
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return out, &DiscoveryError{Failed: failed}
	}
	return out, nil
}

// DiscoveryError is RemoteResources' error: some remote group-versions are
// unavailable.
type DiscoveryError struct {
	// Failed are "<gv>: <why>", sorted.
	Failed []string
}

// FailedGroupVersions is how many group-versions are left out.
func (e *DiscoveryError) FailedGroupVersions() int { return len(e.Failed) }

func (e *DiscoveryError) Error() string {
	return "unable to retrieve the complete list of server APIs: " + strings.Join(e.Failed, ", ")
}

// WatchRemoteResources has f called after every change of what
// RemoteResources returns (a remote APIService came, went, changed, became
// available or unavailable, or its backend's discovery document changed),
// until stop is called. f must not block.
func (a *Aggregator) WatchRemoteResources(f func()) (stop func()) {
	a.remoteWatchMu.Lock()
	defer a.remoteWatchMu.Unlock()
	if a.remoteWatchers == nil {
		a.remoteWatchers = map[uint64]func(){}
	}
	id := a.remoteWatchNext
	a.remoteWatchNext++
	a.remoteWatchers[id] = f
	return func() {
		a.remoteWatchMu.Lock()
		defer a.remoteWatchMu.Unlock()
		delete(a.remoteWatchers, id)
	}
}

// remoteChanged calls the watchers of RemoteResources.
func (a *Aggregator) remoteChanged() {
	a.remoteWatchMu.Lock()
	funcs := make([]func(), 0, len(a.remoteWatchers))
	for _, f := range a.remoteWatchers {
		funcs = append(funcs, f)
	}
	a.remoteWatchMu.Unlock()
	for _, f := range funcs {
		f()
	}
}

// remoteInfo is a remote resource's description from its discovery
// document: the subresource "status" among its entries sets
// StatusSubresource.
func remoteInfo(gv meta.GroupVersion, r meta.APIResource, list *meta.APIResourceList) registry.ResourceInfo {
	info := registry.ResourceInfo{GroupVersion: gv, Resource: r.Name, SingularName: r.SingularName, Kind: r.Kind,
		ShortNames: r.ShortNames, Categories: r.Categories, NamespaceScoped: r.Namespaced, Verbs: r.Verbs}
	for _, s := range list.APIResources {
		if s.Name == r.Name+"/status" {
			info.StatusSubresource = true
		}
	}
	return info
}

// remoteResource is a resource of a remote APIService as the control
// plane's controllers use it: every call is an HTTP request to the
// backend the APIService names, as ControllerUser.
type remoteResource struct {
	a          *Aggregator
	apiService string
	info       registry.ResourceInfo
}

var _ registry.Resource = (*remoteResource)(nil)

func (r *remoteResource) Info() registry.ResourceInfo { return r.info }

func (r *remoteResource) New() meta.Object { return &RemoteObject{} }

func (r *remoteResource) gr() meta.GroupResource {
	return meta.GroupResource{Group: r.info.GroupVersion.Group, Resource: r.info.Resource}
}

// maxObjectBytes bounds an answer of a backend to a controller, a list
// included.
const maxObjectBytes = 256 << 20

// request sends one request to the backend and returns its answer, or the
// backend's Status as a *meta.StatusError for a status of 300 or more. An
// unavailable APIService is 503 without a dial, as the proxy answers.
func (r *remoteResource) request(ctx context.Context, method, ns, name, sub string, q url.Values, body any) (*http.Response, error) {
	a := r.a
	a.mu.RLock()
	svc, b := a.services[r.apiService], a.backends[r.apiService]
	a.mu.RUnlock()
	if svc == nil || svc.Spec.Service == nil || b == nil || !svc.IsAvailable() {
		return nil, meta.NewServiceUnavailable(fmt.Sprintf("the APIService %s is not available", r.apiService))
	}
	base, err := a.cfg.ServiceResolver.ResolveEndpoint(b.service.Namespace, b.service.Name, b.service.PortOr443())
	if err != nil {
		return nil, meta.NewServiceUnavailable(fmt.Sprintf("resolving the service of the APIService %s: %v", r.apiService, err))
	}
	u := *base
	path := "/apis/" + r.info.GroupVersion.Group + "/" + r.info.GroupVersion.Version
	if r.info.NamespaceScoped && ns != "" {
		path += "/namespaces/" + url.PathEscape(ns)
	}
	path += "/" + r.info.Resource
	if name != "" {
		path += "/" + url.PathEscape(name)
	}
	if sub != "" {
		path += "/" + sub
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the body of %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	SetProxyHeaders(req.Header, ControllerUser)
	resp, err := b.RoundTrip(req)
	if err != nil {
		return nil, meta.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err))
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, _ := readLimited(resp.Body, maxDocumentBytes)
		return nil, statusError(resp.StatusCode, raw)
	}
	return resp, nil
}

// statusError is the error of a failed answer: its Status when it has
// one, otherwise one made of its code and body.
func statusError(code int, body []byte) error {
	var st meta.Status
	if err := json.Unmarshal(body, &st); err == nil && st.Kind == "Status" && st.Code != 0 {
		return &meta.StatusError{ErrStatus: st}
	}
	st = meta.Status{TypeMeta: meta.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: meta.StatusFailure, Code: int32(code),
		Reason: reasonForCode(code), Message: fmt.Sprintf("the server responded with the status code %d: %s", code, strings.TrimSpace(string(body)))}
	return &meta.StatusError{ErrStatus: st}
}

// reasonForCode is client-go's reason for an answer without a Status.
func reasonForCode(code int) meta.StatusReason {
	switch code {
	case http.StatusNotFound:
		return meta.StatusReasonNotFound
	case http.StatusConflict:
		return meta.StatusReasonConflict
	case http.StatusForbidden:
		return meta.StatusReasonForbidden
	case http.StatusUnauthorized:
		return meta.StatusReasonUnauthorized
	case http.StatusGone:
		return meta.StatusReasonGone
	case http.StatusServiceUnavailable:
		return meta.StatusReasonServiceUnavailable
	case http.StatusMethodNotAllowed:
		return meta.StatusReasonMethodNotAllowed
	}
	return meta.StatusReasonInternalError
}

// decode reads a successful answer into v.
func decode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	raw, err := readLimited(resp.Body, maxObjectBytes)
	if err != nil {
		return fmt.Errorf("reading the answer of %s: %w", resp.Request.URL.Path, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding the answer of %s: %w", resp.Request.URL.Path, err)
	}
	return nil
}

func (r *remoteResource) Get(ctx context.Context, ns, name string, opts meta.GetOptions) (registry.Item, error) {
	q := url.Values{}
	if opts.ResourceVersion != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	resp, err := r.request(ctx, http.MethodGet, ns, name, "", q, nil)
	if err != nil {
		return registry.Item{}, err
	}
	obj := &RemoteObject{}
	if err := decode(resp, obj); err != nil {
		return registry.Item{}, err
	}
	return registry.NewItem(obj), nil
}

// listQuery is opts as query parameters.
func listQuery(opts meta.ListOptions) url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("labelSelector", opts.LabelSelector)
	set("fieldSelector", opts.FieldSelector)
	set("resourceVersion", opts.ResourceVersion)
	set("resourceVersionMatch", string(opts.ResourceVersionMatch))
	set("continue", opts.Continue)
	if opts.Limit > 0 {
		q.Set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	if opts.TimeoutSeconds != nil {
		q.Set("timeoutSeconds", strconv.FormatInt(*opts.TimeoutSeconds, 10))
	}
	if opts.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	if opts.SendInitialEvents != nil {
		q.Set("sendInitialEvents", strconv.FormatBool(*opts.SendInitialEvents))
	}
	return q
}

// remoteList is a list's JSON.
type remoteList struct {
	Kind     string          `json:"kind"`
	Metadata meta.ListMeta   `json:"metadata"`
	Items    []*RemoteObject `json:"items"`
}

func (l *remoteList) list() *registry.List {
	out := &registry.List{ResourceVersion: l.Metadata.ResourceVersion, Continue: l.Metadata.Continue,
		RemainingItemCount: l.Metadata.RemainingItemCount, Items: make([]registry.Item, 0, len(l.Items))}
	for _, o := range l.Items {
		out.Items = append(out.Items, registry.NewItem(o))
	}
	return out
}

func (r *remoteResource) List(ctx context.Context, ns string, opts meta.ListOptions) (*registry.List, error) {
	resp, err := r.request(ctx, http.MethodGet, ns, "", "", listQuery(opts), nil)
	if err != nil {
		return nil, err
	}
	var l remoteList
	if err := decode(resp, &l); err != nil {
		return nil, err
	}
	return l.list(), nil
}

// Watch streams the backend's watch; the channel closes when the stream
// ends (the informer watching then resumes from the last revision) or ctx
// does.
func (r *remoteResource) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.WatchEvent, error) {
	q := listQuery(opts)
	q.Set("watch", "true")
	resp, err := r.request(ctx, http.MethodGet, ns, "", "", q, nil)
	if err != nil {
		return nil, err
	}
	out := make(chan registry.WatchEvent)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var we meta.WatchEvent
			if err := dec.Decode(&we); err != nil {
				return // the stream ended, or ctx did and closed it
			}
			ev := registry.WatchEvent{Type: we.Type}
			if we.Type == meta.Error {
				var st meta.Status
				if err := json.Unmarshal(we.Object, &st); err != nil {
					st = meta.StatusOf(meta.NewInternalError(fmt.Errorf("decoding a watch error: %w", err)))
				}
				ev.Err = &meta.StatusError{ErrStatus: st}
			} else {
				obj := &RemoteObject{}
				if err := json.Unmarshal(we.Object, obj); err != nil {
					ev = registry.WatchEvent{Type: meta.Error, Err: meta.NewInternalError(fmt.Errorf("decoding a watch event of %s: %w", r.gr(), err))}
				} else {
					ev.Item = registry.NewItem(obj)
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Type == meta.Error {
				return
			}
		}
	}()
	return out, nil
}

func dryRunQuery(dryRun bool) url.Values {
	q := url.Values{}
	if dryRun {
		q.Set("dryRun", meta.DryRunAll)
	}
	return q
}

// Create posts obj; admission is the backend's (opts' Admit and Validate,
// the front server's, do not run: a proxied request runs the backend's
// admission only too).
func (r *remoteResource) Create(ctx context.Context, ns string, obj meta.Object, opts registry.WriteOptions) (registry.Item, error) {
	resp, err := r.request(ctx, http.MethodPost, ns, "", "", dryRunQuery(opts.DryRun), obj)
	if err != nil {
		return registry.Item{}, err
	}
	out := &RemoteObject{}
	if err := decode(resp, out); err != nil {
		return registry.Item{}, err
	}
	return registry.NewItem(out), nil
}

// updateAttempts bounds the read-modify-write rounds of Update that lose
// a race with another writer (409).
const updateAttempts = 5

// Update reads the object, has fn change it, and puts it back with the
// resourceVersion it read, so that a concurrent write makes the backend
// answer 409; it then reads and tries again, as the registry's update
// retries a lost race. The bool is whether the PUT created the object.
func (r *remoteResource) Update(ctx context.Context, ns, name string, fn registry.ObjectUpdate, opts registry.UpdateOptions) (registry.Item, bool, error) {
	var lastErr error
	for range updateAttempts {
		var cur meta.Object
		it, err := r.Get(ctx, ns, name, meta.GetOptions{})
		switch {
		case meta.IsNotFound(err):
		case err != nil:
			return registry.Item{}, false, err
		default:
			if cur, err = it.Object(); err != nil {
				return registry.Item{}, false, err
			}
			if p := opts.Preconditions; p != nil {
				m := cur.GetObjectMeta()
				if p.UID != nil && *p.UID != m.UID || p.ResourceVersion != nil && *p.ResourceVersion != m.ResourceVersion {
					return registry.Item{}, false, meta.NewConflict(r.gr(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
				}
			}
		}
		next, err := fn(ctx, cur)
		if err != nil {
			return registry.Item{}, false, err
		}
		resp, err := r.request(ctx, http.MethodPut, ns, name, opts.Subresource, dryRunQuery(opts.DryRun), next)
		if meta.IsConflict(err) {
			lastErr = err
			continue
		}
		if err != nil {
			return registry.Item{}, false, err
		}
		created := resp.StatusCode == http.StatusCreated
		out := &RemoteObject{}
		if err := decode(resp, out); err != nil {
			return registry.Item{}, false, err
		}
		return registry.NewItem(out), created, nil
	}
	return registry.Item{}, false, lastErr
}

func deleteBody(opts registry.DeleteOptions) *meta.DeleteOptions {
	body := &meta.DeleteOptions{TypeMeta: meta.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/v1"},
		Preconditions: opts.Preconditions, PropagationPolicy: opts.PropagationPolicy, OrphanDependents: opts.OrphanDependents}
	if opts.DryRun {
		body.DryRun = []string{meta.DryRunAll}
	}
	return body
}

// Delete deletes the object; the bool is false when the backend kept it
// (202, or the object answered still carries finalizers).
func (r *remoteResource) Delete(ctx context.Context, ns, name string, opts registry.DeleteOptions) (registry.Item, bool, error) {
	resp, err := r.request(ctx, http.MethodDelete, ns, name, "", nil, deleteBody(opts))
	if err != nil {
		return registry.Item{}, false, err
	}
	accepted := resp.StatusCode == http.StatusAccepted
	obj := &RemoteObject{}
	if err := decode(resp, obj); err != nil {
		return registry.Item{}, false, err
	}
	if obj.Kind == "Status" {
		// The object is gone; a Status is what kube-apiserver answers
		// for built-in resources deleted at once.
		return registry.Item{}, true, nil
	}
	kept := accepted || obj.DeletionTimestamp != nil && len(obj.Finalizers) > 0
	return registry.NewItem(obj), !kept, nil
}

func (r *remoteResource) DeleteCollection(ctx context.Context, ns string, listOpts meta.ListOptions, opts registry.DeleteOptions) (*registry.List, error) {
	resp, err := r.request(ctx, http.MethodDelete, ns, "", "", listQuery(listOpts), deleteBody(opts))
	if err != nil {
		return nil, err
	}
	var l remoteList
	if err := decode(resp, &l); err != nil {
		return nil, err
	}
	if l.Kind == "Status" {
		return &registry.List{}, nil
	}
	return l.list(), nil
}

// Table renders kube-apiserver's default table of a resource without
// printer columns: Name and Created At.
func (r *remoteResource) Table(_ context.Context, items []registry.Item, opts meta.TableOptions) (*meta.Table, error) {
	t := &meta.Table{TypeMeta: meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, Rows: make([]meta.TableRow, 0, len(items))}
	if !opts.NoHeaders {
		t.ColumnDefinitions = []meta.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
			{Name: "Created At", Type: "date", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
		}
	}
	for _, it := range items {
		obj, err := it.Object()
		if err != nil {
			return nil, err
		}
		m := obj.GetObjectMeta()
		row := meta.TableRow{Cells: []any{m.Name, m.CreationTimestamp.UTC().Format(time.RFC3339)}}
		if opts.IncludeObject == meta.IncludeObject {
			if row.Object, err = it.JSON(); err != nil {
				return nil, err
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// RemoteObject is an object of a remote resource: its apiVersion, kind
// and metadata decoded, every other top-level field kept as the backend
// wrote it, so that an update writes back what it did not change.
type RemoteObject struct {
	meta.TypeMeta
	meta.ObjectMeta
	// Fields are the other top-level fields (spec, status...).
	Fields map[string]json.RawMessage
}

// GetTypeMeta implements meta.Object.
func (o *RemoteObject) GetTypeMeta() *meta.TypeMeta { return &o.TypeMeta }

// GetObjectMeta implements meta.Object.
func (o *RemoteObject) GetObjectMeta() *meta.ObjectMeta { return &o.ObjectMeta }

// UnmarshalJSON implements json.Unmarshaler.
func (o *RemoteObject) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	*o = RemoteObject{}
	for k, dst := range map[string]any{"apiVersion": &o.APIVersion, "kind": &o.Kind, "metadata": &o.ObjectMeta} {
		if raw, ok := fields[k]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return fmt.Errorf("decoding %s: %w", k, err)
			}
			delete(fields, k)
		}
	}
	if len(fields) > 0 {
		o.Fields = fields
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (o RemoteObject) MarshalJSON() ([]byte, error) {
	out := make(map[string]any, len(o.Fields)+3)
	for k, v := range o.Fields {
		out[k] = v
	}
	out["apiVersion"], out["kind"], out["metadata"] = o.APIVersion, o.Kind, o.ObjectMeta
	return json.Marshal(out)
}
