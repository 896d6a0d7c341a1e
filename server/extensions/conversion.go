package extensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema/structural"
)

// ConversionReviewAPIVersion is the one ConversionReview version apikit
// speaks: kube-apiserver prefers it, and a CRD's
// conversionReviewVersions must name it.
const ConversionReviewAPIVersion = GroupName + "/v1"

// ConversionReview is apiextensions.k8s.io/v1 ConversionReview: what the
// server posts to a conversion webhook (Request) and reads back
// (Response).
type ConversionReview struct {
	meta.TypeMeta `json:",inline"`
	Request       *ConversionRequest  `json:"request,omitempty"`
	Response      *ConversionResponse `json:"response,omitempty"`
}

// ConversionRequest asks for objects in another version.
type ConversionRequest struct {
	// UID tells this request apart; the response must carry it back.
	UID string `json:"uid"`
	// DesiredAPIVersion is the group/version to convert the objects to.
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

// ConversionResponse is the webhook's answer: the objects converted, in
// the request's order, and a Status whose status is Success.
type ConversionResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           meta.Status       `json:"result"`
}

// defaultConversionTimeout is how long a conversion webhook may take:
// kube-apiserver's webhook client timeout (a CRD has no field for it).
const defaultConversionTimeout = 30 * time.Second

// webhookConverter converts one CRD's custom resources between its
// versions by posting ConversionReviews to the CRD's webhook, as
// apiextensions-apiserver's webhook converter does.
type webhookConverter struct {
	group, kind, listKind string
	cc                    WebhookClientConfig
	resolver              ServiceResolver
	clients               *iwebhook.Clients
	timeout               time.Duration
}

// target resolves where the next call goes: the URL, or the Service
// through the resolver (each call, so a moved Service is followed), with
// kube-apiserver's timeout query parameter.
func (c *webhookConverter) target() (*http.Client, string, error) {
	var u *url.URL
	serverName := ""
	switch {
	case c.cc.URL != nil:
		var err error
		if u, err = url.Parse(*c.cc.URL); err != nil {
			return nil, "", fmt.Errorf("invalid webhook URL: %w", err)
		}
	case c.cc.Service != nil:
		svc := c.cc.Service
		if c.resolver == nil {
			return nil, "", errors.New("no service resolver: this server cannot call webhooks behind a Service")
		}
		port := int32(443)
		if svc.Port != nil {
			port = *svc.Port
		}
		base, err := c.resolver.ResolveEndpoint(svc.Namespace, svc.Name, port)
		if err != nil {
			return nil, "", err
		}
		u = &url.URL{Scheme: "https", Host: base.Host}
		if svc.Path != nil {
			u.Path = *svc.Path
		}
		// The serving certificate names the Service, as kube-apiserver
		// verifies it.
		serverName = svc.Name + "." + svc.Namespace + ".svc"
	default:
		return nil, "", errors.New("the webhook has neither a url nor a service")
	}
	hc, err := c.clients.Get(c.cc.CABundle, serverName)
	if err != nil {
		return nil, "", err
	}
	q := u.Query()
	q.Set("timeout", strconv.Itoa(int(c.timeout/time.Second))+"s")
	u.RawQuery = q.Encode()
	return hc, u.String(), nil
}

// gvkString formats a group, version and kind as kube's
// schema.GroupVersionKind prints itself in its messages.
func gvkString(group, version, kind string) string {
	return group + "/" + version + ", Kind=" + kind
}

// convert sends objs, each in its version of froms, to the webhook and
// returns them in version to, in order; list says they are a list's items
// (one review for all of them, and kube's list messages), from is the
// version the messages name. Errors carry kube-apiserver's messages; the
// caller decides the Status.
func (c *webhookConverter) convert(ctx context.Context, objs []*Object, froms []string, to, from string, list bool) ([]*Object, error) {
	if len(objs) == 0 {
		return nil, nil
	}
	kind := c.kind
	if list {
		kind = c.listKind
	}
	in := gvkString(c.group, from, kind)
	toAPI := meta.GroupVersion{Group: c.group, Version: to}.String()
	raws := make([]json.RawMessage, len(objs))
	size := 0
	for i, o := range objs {
		b, err := o.reviewJSON(meta.GroupVersion{Group: c.group, Version: froms[i]}.String())
		if err != nil {
			return nil, fmt.Errorf("conversion webhook for %s failed: encoding %s: %w", in, o.Name, err)
		}
		raws[i] = b
		size += len(b)
	}
	uid := uuid.NewString()
	body, err := json.Marshal(ConversionReview{
		TypeMeta: meta.TypeMeta{APIVersion: ConversionReviewAPIVersion, Kind: "ConversionReview"},
		Request:  &ConversionRequest{UID: uid, DesiredAPIVersion: toAPI, Objects: raws},
	})
	if err != nil {
		return nil, fmt.Errorf("conversion webhook for %s failed: %w", in, err)
	}
	hc, target, err := c.target()
	if err != nil {
		return nil, fmt.Errorf("conversion webhook for %s failed: %w", in, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var review ConversionReview
	// The answer holds as many objects as the request: allow it a
	// multiple of the request's size, and never less than 1 MiB.
	limit := 1<<20 + 4*size
	if err := iwebhook.Post(callCtx, hc, iwebhook.Request{URL: target, Body: body, MaxResponseBytes: limit}, &review); err != nil {
		return nil, fmt.Errorf("conversion webhook for %s failed: %w", in, err)
	}
	return convertedObjects(&review, uid, objs, toAPI, c.kind, in, list)
}

// reviewJSON encodes o for a ConversionRequest, as an object of apiVersion.
func (o *Object) reviewJSON(apiVersion string) ([]byte, error) {
	m := o.Fields()
	m["apiVersion"] = apiVersion
	m["kind"] = o.Kind
	m["metadata"] = &o.ObjectMeta
	return json.Marshal(m)
}

// convertedObjects checks a webhook's answer as apiextensions-apiserver
// does and returns the converted objects: the response must be a v1
// ConversionReview with the request's uid, Success, and one object per
// original, each of the desired apiVersion and the original's kind, name,
// namespace and uid. Of the metadata only labels and annotations may
// change; the rest is the original's. in names the input's kind in
// messages.
func convertedObjects(review *ConversionReview, uid string, originals []*Object, toAPI, kind, in string, list bool) ([]*Object, error) {
	failed := func(err error) error { return fmt.Errorf("conversion webhook for %s failed: %w", in, err) }
	if gvk := gvkOf(review.APIVersion, review.Kind); review.APIVersion != ConversionReviewAPIVersion || review.Kind != "ConversionReview" {
		return nil, failed(fmt.Errorf("expected webhook response of %s, got %s", gvkString(GroupName, "v1", "ConversionReview"), gvk))
	}
	r := review.Response
	if r == nil {
		return nil, failed(errors.New("no response provided"))
	}
	if r.UID != uid {
		return nil, failed(fmt.Errorf("expected response.uid=%q, got %q", uid, r.UID))
	}
	if r.Result.Status != meta.StatusSuccess {
		if r.Result.Message != "" {
			return nil, failed(errors.New(r.Result.Message))
		}
		return nil, failed(fmt.Errorf("response.result.status was '%s', not 'Success'", r.Result.Status))
	}
	if len(r.ConvertedObjects) != len(originals) {
		return nil, fmt.Errorf("conversion webhook for %s returned %d objects, expected %d", in, len(r.ConvertedObjects), len(originals))
	}
	out := make([]*Object, len(originals))
	for i, raw := range r.ConvertedObjects {
		o, err := convertedObject(raw, originals[i], toAPI, kind)
		if err != nil {
			// kube-apiserver counts list items from 0 when the item does
			// not decode and from 1 after, and calls a single object's
			// problems by other names: its messages are kept.
			var ce *convertedError
			switch {
			case !errors.As(err, &ce):
				return nil, err
			case list && ce.step == stepDecode:
				return nil, fmt.Errorf("conversion webhook for %s returned invalid converted object at index %d: %v", in, i, ce.err)
			case list && ce.step == stepMetadata:
				return nil, fmt.Errorf("conversion webhook for %s returned invalid metadata in object at index %d: %v", in, i+1, ce.err)
			case list:
				return nil, fmt.Errorf("conversion webhook for %s returned invalid converted object at index %d: %v", in, i+1, ce.err)
			case ce.step == stepDecode:
				return nil, ce.err
			case ce.step == stepVersionKind:
				return nil, fmt.Errorf("conversion webhook for %s returned invalid object at index 0: %v", in, ce.err)
			case ce.step == stepMetadata:
				return nil, fmt.Errorf("conversion webhook for %s returned invalid metadata: %v", in, ce.err)
			default:
				return nil, fmt.Errorf("conversion webhook for %s returned invalid object: %v", in, ce.err)
			}
		}
		out[i] = o
	}
	return out, nil
}

// The steps of checking one converted object, for the message.
const (
	stepDecode = iota
	stepVersionKind
	stepSame
	stepMetadata
)

type convertedError struct {
	step int
	err  error
}

func (e *convertedError) Error() string { return e.err.Error() }

func gvkOf(apiVersion, kind string) string {
	gv, _ := meta.ParseGroupVersion(apiVersion)
	return gvkString(gv.Group, gv.Version, kind)
}

// convertedObject checks one converted object against its original and
// returns it with the original's metadata but for labels and annotations.
func convertedObject(raw json.RawMessage, orig *Object, toAPI, kind string) (*Object, error) {
	fail := func(step int, format string, args ...any) error {
		return &convertedError{step: step, err: fmt.Errorf(format, args...)}
	}
	v, err := structural.DecodeJSON(raw)
	if err != nil {
		return nil, fail(stepDecode, "%v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fail(stepDecode, "a converted object must be a JSON object")
	}
	gotKind, _ := m["kind"].(string)
	if gotKind == "" {
		return nil, fail(stepDecode, "Object 'Kind' is missing in '%s'", raw)
	}
	apiVersion, _ := m["apiVersion"].(string)
	want, _ := meta.ParseGroupVersion(toAPI)
	got, _ := meta.ParseGroupVersion(apiVersion)
	if got != want {
		return nil, fail(stepVersionKind, "invalid groupVersion (expected %s, received %s)", want, got)
	}
	if gotKind != kind {
		return nil, fail(stepVersionKind, "invalid kind (expected %s, received %s)", kind, gotKind)
	}
	md, _ := m["metadata"].(map[string]any)
	str := func(k string) string { s, _ := md[k].(string); return s }
	switch {
	case str("name") != orig.Name:
		return nil, fail(stepSame, "must have the same name: %s != %s", orig.Name, str("name"))
	case str("namespace") != orig.Namespace:
		return nil, fail(stepSame, "must have the same namespace: %s != %s", orig.Namespace, str("namespace"))
	case str("uid") != orig.UID:
		return nil, fail(stepSame, "must have the same UID: %s != %s", orig.UID, str("uid"))
	}
	rawMeta, found := m["metadata"]
	if !found {
		return nil, fail(stepMetadata, "missing metadata in converted object")
	}
	if md == nil {
		return nil, fail(stepMetadata, "invalid metadata of type %T in converted object", rawMeta)
	}
	out := &Object{TypeMeta: meta.TypeMeta{APIVersion: toAPI, Kind: kind}, ObjectMeta: orig.ObjectMeta}
	for _, field := range []string{"labels", "annotations"} {
		values, err := stringMap(md, field)
		if err != nil {
			return nil, fail(stepMetadata, "%v", err)
		}
		current := orig.Labels
		if field == "annotations" {
			current = orig.Annotations
		}
		if changed(current, values) {
			var errs meta.FieldErrors
			if field == "labels" {
				errs = registry.ValidateLabels(values, meta.NewPath("metadata", "labels"))
			} else {
				errs = registry.ValidateAnnotations(values, meta.NewPath("metadata", "annotation"))
			}
			if len(errs) > 0 {
				return nil, fail(stepMetadata, "%v", errs)
			}
		}
		if field == "labels" {
			out.Labels = values
		} else {
			out.Annotations = values
		}
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	delete(m, "metadata")
	out.SetFields(m)
	return out, nil
}

// stringMap reads metadata.labels or metadata.annotations of a converted
// object: absent or null is none, anything but an object of strings is
// refused with kube-apiserver's messages.
func stringMap(md map[string]any, field string) (map[string]string, error) {
	v, found := md[field]
	if !found || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("invalid metadata.%s of type %T in converted object", field, v)
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", field, k, e)
		}
		out[k] = s
	}
	return out, nil
}

func changed(a, b map[string]string) bool {
	if len(a) != len(b) {
		return true
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || w != v {
			return true
		}
	}
	return false
}

// readFailed is the Status of a conversion that failed on a read: 500 with
// no reason and the converter's message, as kube-apiserver answers a
// storage decode error (kubectl: "Error from server: conversion webhook
// for ... failed: ...").
func readFailed(err error) error {
	return &meta.StatusError{ErrStatus: meta.Status{
		TypeMeta: meta.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   meta.StatusFailure,
		Code:     http.StatusInternalServerError,
		Message:  err.Error(),
	}}
}

// webhookVersion serves a version other than the storage version of a CRD
// whose conversion strategy is Webhook. The resource it wraps serves the
// version from the store with objects in the storage version's shape (the
// watch cache keeps the stored bytes); every object crossing between the
// two goes through the webhook: on reads (one review per LIST, watch
// event or object) and on writes (to the storage version before the
// store's admission, validation and write). Errors of reads are kube's
// 500 without reason, of writes an InternalError.
type webhookVersion struct {
	registry.Resource
	conv                    *webhookConverter
	version, storageVersion string
	// served and storage are the two versions' strategies: converted
	// objects are pruned and defaulted by their schema, and a write is
	// validated in the version it was made in.
	served, storage *crStrategy
}

var (
	_ registry.VersionConverter = (*webhookVersion)(nil)
	_ registry.StorageConverter = (*webhookVersion)(nil)
)

// toServed converts objects read from storage to the served version, in
// one review: those stored in another version (their stored version
// decides, see Object.storedVersion); the others are defaulted copies.
func (r *webhookVersion) toServed(ctx context.Context, objs []*Object, list bool) ([]*Object, error) {
	out := make([]*Object, len(objs))
	var pending []*Object
	var froms []string
	var at []int
	for i, o := range objs {
		from := o.storedVersion(r.conv.group, r.storageVersion)
		if from == r.version {
			c := o.deepCopy()
			r.served.Default(c)
			out[i] = c
			continue
		}
		pending, froms, at = append(pending, o), append(froms, from), append(at, i)
	}
	if len(pending) == 0 {
		return out, nil
	}
	in := r.storageVersion
	if !list {
		in = froms[0]
	}
	conv, err := r.conv.convert(ctx, pending, froms, r.version, in, list)
	if err != nil {
		return nil, err
	}
	for j, o := range conv {
		r.served.Default(o)
		out[at[j]] = o
	}
	return out, nil
}

// toStorage converts an object of the served version to the storage one.
func (r *webhookVersion) toStorage(ctx context.Context, obj *Object) (*Object, error) {
	if r.version == r.storageVersion {
		obj.decodedAPIVersion = "" // what is written is in the storage version
		return obj, nil
	}
	out, err := r.conv.convert(ctx, []*Object{obj}, []string{r.version}, r.storageVersion, r.version, false)
	if err != nil {
		return nil, meta.NewInternalError(err)
	}
	r.storage.Default(out[0])
	return out[0], nil
}

// ToServed implements registry.VersionConverter for admission and
// server-side apply, which convert without a request context: the call is
// bounded by the webhook's timeout.
func (r *webhookVersion) ToServed(stored meta.Object) (meta.Object, error) {
	o, ok := stored.(*Object)
	if !ok {
		return nil, fmt.Errorf("object of type %T is not a custom resource", stored)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.conv.timeout)
	defer cancel()
	out, err := r.toServed(ctx, []*Object{o}, false)
	if err != nil {
		return nil, readFailed(err)
	}
	return out[0], nil
}

// ToStorage implements registry.StorageConverter, bounded as ToServed.
func (r *webhookVersion) ToStorage(served meta.Object) (meta.Object, error) {
	o, ok := served.(*Object)
	if !ok {
		return nil, fmt.Errorf("object of type %T is not a custom resource", served)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.conv.timeout)
	defer cancel()
	return r.toStorage(ctx, o)
}

// items converts items read from storage into items of the served
// version. Items stored in the served version when it is the storage
// version are the registry's own, whose JSON comes from the memo.
func (r *webhookVersion) items(ctx context.Context, in []registry.Item, list bool) ([]registry.Item, error) {
	out := make([]registry.Item, len(in))
	var objs []*Object
	var at []int
	for i, it := range in {
		o, err := it.Object()
		if err != nil {
			return nil, err
		}
		obj := o.(*Object)
		if r.version == r.storageVersion && obj.storedVersion(r.conv.group, r.storageVersion) == r.version {
			out[i] = it
			continue
		}
		objs, at = append(objs, obj), append(at, i)
	}
	if len(objs) == 0 {
		return out, nil
	}
	conv, err := r.toServed(ctx, objs, list)
	if err != nil {
		return nil, readFailed(err)
	}
	for j, o := range conv {
		out[at[j]] = registry.NewItem(o)
	}
	return out, nil
}

func (r *webhookVersion) item(ctx context.Context, it registry.Item) (registry.Item, error) {
	out, err := r.items(ctx, []registry.Item{it}, false)
	if err != nil {
		return registry.Item{}, err
	}
	return out[0], nil
}

func (r *webhookVersion) Get(ctx context.Context, ns, name string, opts meta.GetOptions) (registry.Item, error) {
	it, err := r.Resource.Get(ctx, ns, name, opts)
	if err != nil {
		return registry.Item{}, err
	}
	return r.item(ctx, it)
}

// List converts the page's objects in one review, as kube-apiserver sends
// a list's items.
func (r *webhookVersion) List(ctx context.Context, ns string, opts meta.ListOptions) (*registry.List, error) {
	l, err := r.Resource.List(ctx, ns, opts)
	if err != nil {
		return nil, err
	}
	if l.Items, err = r.items(ctx, l.Items, true); err != nil {
		return nil, err
	}
	return l, nil
}

// Watch converts each event's object; a conversion that fails ends the
// watch with an Error event carrying its Status.
func (r *webhookVersion) Watch(ctx context.Context, ns string, opts meta.ListOptions) (<-chan registry.WatchEvent, error) {
	return registry.ConvertWatch(ctx, func(ctx context.Context) (<-chan registry.WatchEvent, error) {
		return r.Resource.Watch(ctx, ns, opts)
	}, func(ctx context.Context, ev registry.WatchEvent) (registry.WatchEvent, bool) {
		if ev.Type == meta.Error || ev.Type == meta.Bookmark {
			return ev, ev.Type == meta.Error
		}
		it, err := r.item(ctx, ev.Item)
		if err != nil {
			return registry.WatchEvent{Type: meta.Error, Err: err}, true
		}
		ev.Item = it
		return ev, false
	})
}

// validate checks a write in the version it was made in, before it is
// converted, as kube-apiserver validates a custom resource in the
// request's version.
func (r *webhookVersion) validate(ctx context.Context, obj, old *Object) error {
	if r.version == r.storageVersion {
		return nil // the store validates in this version
	}
	var errs meta.FieldErrors
	if old == nil {
		errs = r.served.Validate(ctx, obj)
	} else {
		errs = r.served.ValidateUpdate(ctx, obj, old)
	}
	if len(errs) > 0 {
		info := r.Info()
		return meta.NewInvalid(meta.GroupKind{Group: info.GroupVersion.Group, Kind: info.Kind}, obj.Name, errs)
	}
	return nil
}

func (r *webhookVersion) Create(ctx context.Context, ns string, obj meta.Object, opts registry.WriteOptions) (registry.Item, error) {
	o, ok := obj.(*Object)
	if !ok {
		return registry.Item{}, meta.NewInternalError(fmt.Errorf("object of type %T is not a custom resource", obj))
	}
	if err := r.validate(ctx, o, nil); err != nil {
		return registry.Item{}, err
	}
	stored, err := r.toStorage(ctx, o)
	if err != nil {
		return registry.Item{}, err
	}
	it, err := r.Resource.Create(ctx, ns, stored, opts)
	if err != nil {
		return registry.Item{}, err
	}
	return r.item(ctx, it)
}

// Update hands fn the current object in the served version and stores
// what it returns in the storage version.
func (r *webhookVersion) Update(ctx context.Context, ns, name string, fn registry.ObjectUpdate, opts registry.UpdateOptions) (registry.Item, bool, error) {
	it, created, err := r.Resource.Update(ctx, ns, name, func(ctx context.Context, cur meta.Object) (meta.Object, error) {
		var current *Object
		if cur != nil {
			conv, err := r.toServed(ctx, []*Object{cur.(*Object)}, false)
			if err != nil {
				return nil, readFailed(err)
			}
			current = conv[0]
		}
		var arg meta.Object
		if current != nil {
			arg = current
		}
		next, err := fn(ctx, arg)
		if err != nil {
			return nil, err
		}
		o, ok := next.(*Object)
		if !ok {
			return nil, meta.NewInternalError(fmt.Errorf("object of type %T is not a custom resource", next))
		}
		if err := r.validate(ctx, o, current); err != nil {
			return nil, err
		}
		return r.toStorage(ctx, o)
	}, opts)
	if err != nil {
		return registry.Item{}, false, err
	}
	it, err = r.item(ctx, it)
	return it, created, err
}

func (r *webhookVersion) Delete(ctx context.Context, ns, name string, opts registry.DeleteOptions) (registry.Item, bool, error) {
	it, deleted, err := r.Resource.Delete(ctx, ns, name, opts)
	if err != nil {
		return registry.Item{}, false, err
	}
	it, err = r.item(ctx, it)
	return it, deleted, err
}

func (r *webhookVersion) DeleteCollection(ctx context.Context, ns string, listOpts meta.ListOptions, opts registry.DeleteOptions) (*registry.List, error) {
	l, err := r.Resource.DeleteCollection(ctx, ns, listOpts, opts)
	if err != nil {
		return nil, err
	}
	if l.Items, err = r.items(ctx, l.Items, true); err != nil {
		return nil, err
	}
	return l, nil
}
