package endpoints

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/server/respond"
	"github.com/apikit-dev/apikit/storage"
)

// DefaultMaxRequestBodyBytes is the body size limit kube-apiserver applies
// to writes: 3 MiB.
const DefaultMaxRequestBodyBytes = 3 << 20

// Scope is what the handlers of one served resource share.
type Scope struct {
	Resource registry.Resource
	// Schemas holds the named schemas Schema refers to; Schema is the
	// shape of the resource's Go type. Server-side apply merges by them.
	Schemas *schema.Set
	Schema  *schema.Schema
	// Versions are the resource's served versions (Resource among them),
	// between which server-side apply converts managed field sets.
	Versions []registry.Resource
	// Admission runs on every write; nil admits everything.
	Admission admission.Chain
	// MaxRequestBodyBytes bounds request bodies (default 3 MiB).
	MaxRequestBodyBytes int64
	// MaxObjectBytes bounds the JSON of the object a patch produces,
	// checked before it is decoded (413 beyond); zero means
	// storage.DefaultMaxObjectBytes, the limit every storage backend
	// applies to what it stores by default.
	MaxObjectBytes int64
	// MinRequestTimeout is the base of a watch's lifetime when the client
	// gives no timeoutSeconds: a random duration between it and twice it,
	// so that watches of many clients do not all reconnect at once.
	MinRequestTimeout time.Duration
	// StopWatches, when closed, ends every open watch (server shutdown).
	StopWatches <-chan struct{}
	// OmitItemTypes leaves each item's kind and apiVersion out of LIST
	// responses, as kube-apiserver serves lists of its built-in and
	// aggregated (typed) resources: their conversion to the served version
	// leaves the items' TypeMeta empty, and the list's own kind and
	// apiVersion say what they are (client-go's unstructured lists fill
	// them in). Its lists of custom resources keep them: leave it false for
	// those.
	OmitItemTypes bool
	// GarbageCollection says a garbage collector serves the resource: a
	// delete's propagationPolicy is honoured (registry.DeleteOptions).
	GarbageCollection bool

	// itemTypePrefix is how the JSON of an item in the served version
	// begins when OmitItemTypes: `{"kind":..,"apiVersion":..,`.
	itemTypePrefix []byte
	info           registry.ResourceInfo
	managers       fieldManagers
	// equivalents are the resource's other served versions, for admission.
	equivalents []admission.Equivalent
	gvk         meta.GroupVersionKind
	gvr         meta.GroupVersionResource
}

func (s *Scope) init() {
	s.info = s.Resource.Info()
	s.gvk = s.info.GroupVersion.WithKind(s.info.Kind)
	s.gvr = s.info.GroupVersion.WithResource(s.info.Resource)
	if s.OmitItemTypes {
		kind, _ := json.Marshal(s.info.Kind) // a string: no error
		gv, _ := json.Marshal(s.info.GroupVersion.String())
		s.itemTypePrefix = fmt.Appendf(nil, `{"kind":%s,"apiVersion":%s,`, kind, gv)
	}
	if s.MaxRequestBodyBytes <= 0 {
		s.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if s.MaxObjectBytes <= 0 {
		s.MaxObjectBytes = storage.DefaultMaxObjectBytes
	}
	if s.MinRequestTimeout <= 0 {
		s.MinRequestTimeout = 30 * time.Minute
	}
	s.equivalents = s.admissionEquivalents()
}

func (s *Scope) groupResource() meta.GroupResource { return s.gvr.GroupResource() }

// writeWarnings adds RFC 7234 Warning headers, as kube-apiserver does for
// field validation warnings.
func writeWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		respond.AddWarning(w.Header(), msg)
	}
}

// withValidationWarnings returns ctx with a sink for the warnings a
// resource's validation sends (admission.AddWarning), such as the failed
// CEL rules kube-apiserver's CRD strategy ratchets on an update: each
// distinct message becomes a Warning header once, as kube's per-request
// recorder dedupes them (an update retried on a conflict validates again).
func withValidationWarnings(ctx context.Context, w http.ResponseWriter) context.Context {
	return admission.WithWarnings(ctx, respond.WarningsOnce(w))
}

// admissionFuncs binds the admission chain to one request.
func (s *Scope) admissionFuncs(ctx context.Context, w http.ResponseWriter, op admission.Operation, ns, name, subresource string, dryRun bool) (
	admit func(context.Context, meta.Object, meta.Object) error, validate func(context.Context, meta.Object, meta.Object) error) {
	return s.admissionFuncsWith(ctx, w, op, ns, name, subresource, dryRun, nil)
}

// admissionFuncsWith is admissionFuncs for a request whose options the
// plugins see (admission.Attributes.Options).
func (s *Scope) admissionFuncsWith(ctx context.Context, w http.ResponseWriter, op admission.Operation, ns, name, subresource string, dryRun bool, options any) (
	admit func(context.Context, meta.Object, meta.Object) error, validate func(context.Context, meta.Object, meta.Object) error) {
	if len(s.Admission) == 0 {
		return nil, nil
	}
	user, _ := authn.UserFrom(ctx)
	toVersion, toStorage := converters(s.Resource)
	// Validating webhooks run in parallel: their warnings meet here.
	warn := respond.WarningsOnce(w)
	attrs := func(obj, old meta.Object) *admission.Attributes {
		// A request without a name (a create with generateName, a
		// deletecollection) or without a namespace (across all of them)
		// is admitted per object: name the object at hand.
		n, namespace := name, ns
		for _, o := range []meta.Object{obj, old} {
			if o == nil {
				continue
			}
			if n == "" {
				n = o.GetObjectMeta().Name
			}
			if namespace == "" && s.info.NamespaceScoped {
				namespace = o.GetObjectMeta().Namespace
			}
		}
		return &admission.Attributes{Operation: op, Kind: s.gvk, Resource: s.gvr, Subresource: subresource,
			Namespace: namespace, Name: n, Object: obj, OldObject: old, ToVersion: toVersion, ToStorage: toStorage,
			Equivalents: s.equivalents, DryRun: dryRun, User: user, Schemas: s.Schemas, Schema: s.Schema,
			Options: options}
	}
	admit = func(ctx context.Context, obj, old meta.Object) error {
		return s.Admission.Admit(admission.WithWarnings(ctx, warn), attrs(obj, old))
	}
	validate = func(ctx context.Context, obj, old meta.Object) error {
		return s.Admission.Validate(admission.WithWarnings(ctx, warn), attrs(obj, old))
	}
	return admit, validate
}

// converters returns r's conversions from and to the storage version, nil
// when r is served in its storage version.
func converters(r registry.Resource) (toVersion, toStorage func(meta.Object) (meta.Object, error)) {
	vc, ok := r.(registry.VersionConverter)
	if !ok {
		return nil, nil
	}
	toVersion = vc.ToServed
	if sc, ok := r.(registry.StorageConverter); ok {
		toStorage = sc.ToStorage
	}
	return toVersion, toStorage
}

// admissionEquivalents lists the resource's other served versions, which
// admission webhooks with matchPolicy Equivalent match.
func (s *Scope) admissionEquivalents() []admission.Equivalent {
	var out []admission.Equivalent
	for _, v := range s.Versions {
		info := v.Info()
		if info.GroupVersion == s.info.GroupVersion {
			continue
		}
		toVersion, toStorage := converters(v)
		out = append(out, admission.Equivalent{Kind: info.GroupVersion.WithKind(info.Kind),
			Resource: info.GroupVersion.WithResource(info.Resource), ToVersion: toVersion, ToStorage: toStorage})
	}
	return out
}

func tableOptions(r *http.Request) (meta.TableOptions, error) {
	switch v := meta.IncludeObjectPolicy(request.Query(r).Get("includeObject")); v {
	case "":
		return meta.TableOptions{IncludeObject: meta.IncludeMetadata}, nil
	case meta.IncludeNone, meta.IncludeMetadata, meta.IncludeObject:
		return meta.TableOptions{IncludeObject: v}, nil
	default:
		// kube-apiserver's words (ValidateTableOptions under
		// optionsForTransform), supported values sorted.
		errs := meta.FieldErrors{meta.NotSupported(meta.NewPath("includeObject"), string(v),
			[]string{string(meta.IncludeMetadata), string(meta.IncludeNone), string(meta.IncludeObject)})}
		return meta.TableOptions{}, meta.NewBadRequest("Unable to convert to Table as requested: " + errs.Error())
	}
}

// writeItem writes one object in the negotiated form.
func (s *Scope) writeItem(w http.ResponseWriter, r *http.Request, code int, it registry.Item, form outputForm) {
	body, contentType, err := s.encodeItem(r, it, form, nil)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Body(w, r, code, contentType, body)
}

func (s *Scope) encodeItem(r *http.Request, it registry.Item, form outputForm, listMeta *meta.ListMeta) ([]byte, string, error) {
	return s.encodeItemHeaders(r, it, form, listMeta, false)
}

// encodeItemHeaders is encodeItem, leaving a Table's column definitions
// out when noHeaders is set.
func (s *Scope) encodeItemHeaders(r *http.Request, it registry.Item, form outputForm, listMeta *meta.ListMeta, noHeaders bool) ([]byte, string, error) {
	switch form {
	case formTable:
		opts, err := tableOptions(r)
		if err != nil {
			return nil, "", err
		}
		opts.NoHeaders = noHeaders
		t, err := s.Resource.Table(r.Context(), []registry.Item{it}, opts)
		if err != nil {
			return nil, "", err
		}
		if listMeta != nil {
			t.ListMeta = *listMeta
		} else if obj, err := it.Object(); err == nil {
			// One object's table carries the object's resourceVersion,
			// as kube-apiserver's table convertors set it (a GET, a
			// watch event).
			t.ResourceVersion = obj.GetObjectMeta().ResourceVersion
		}
		b, err := registry.EncodeJSON(t)
		return b, "application/json", err
	case formPartialMetadata:
		pm, err := partialMetadata(it)
		if err != nil {
			return nil, "", err
		}
		b, err := registry.EncodeJSON(pm)
		return b, "application/json", err
	}
	b, err := it.JSON()
	if err != nil {
		return nil, "", err
	}
	if form == formYAML {
		y, err := yaml.JSONToYAML(b)
		return y, "application/yaml", err
	}
	return b, "application/json", nil
}

func partialMetadata(it registry.Item) (meta.PartialObjectMetadata, error) {
	obj, err := it.Object()
	if err != nil {
		return meta.PartialObjectMetadata{}, err
	}
	return meta.PartialObjectMetadata{
		TypeMeta:   meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: *obj.GetObjectMeta(),
	}, nil
}

// writeList writes a page of objects in the negotiated form. The JSON form
// is assembled from each item's (possibly cached) encoding rather than by
// encoding a list value, so a cached LIST costs copies, not encodes.
func (s *Scope) writeList(w http.ResponseWriter, r *http.Request, list *registry.List, form outputForm) {
	lm := meta.ListMeta{ResourceVersion: list.ResourceVersion, Continue: list.Continue, RemainingItemCount: list.RemainingItemCount}
	switch form {
	case formTable:
		opts, err := tableOptions(r)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		t, err := s.Resource.Table(r.Context(), list.Items, opts)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		t.ListMeta = lm
		respond.Object(w, r, http.StatusOK, t)
		return
	case formPartialMetadata:
		items := make([]meta.PartialObjectMetadata, len(list.Items))
		for i, it := range list.Items {
			var err error
			if items[i], err = partialMetadata(it); err != nil {
				respond.Error(w, r, err)
				return
			}
		}
		respond.Object(w, r, http.StatusOK, struct {
			meta.TypeMeta `json:",inline"`
			meta.ListMeta `json:"metadata"`
			Items         []meta.PartialObjectMetadata `json:"items"`
		}{meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, lm, items})
		return
	}
	lmJSON, err := registry.EncodeJSON(lm)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	head := fmt.Appendf(nil, `{"kind":%s,"apiVersion":%s,"metadata":%s,"items":[`,
		strconv.Quote(s.info.Kind+"List"), strconv.Quote(s.info.GroupVersion.String()), lmJSON)
	const tail = "]}"
	size := len(head) + len(tail)
	bodies := make([]registry.JSONParts, len(list.Items))
	for i, it := range list.Items {
		var typeLen int
		if bodies[i], typeLen, err = it.JSONPartsTyped(); err != nil {
			respond.Error(w, r, err)
			return
		}
		// The item's own "{" goes out with the comma before it (see
		// writeListJSON), so the cached encoding is sliced, not copied.
		// The registry knows whether the type fields lead a cached
		// item's JSON without reading it: its bytes are read once, as
		// they are written.
		switch p := s.itemTypePrefix; {
		case len(p) == 0:
			bodies[i][0] = bodies[i][0][1:]
		case typeLen > 0:
			bodies[i][0] = bodies[i][0][typeLen:]
		case bytes.HasPrefix(bodies[i][0], p):
			bodies[i][0] = bodies[i][0][len(p):]
		default:
			bodies[i][0] = bodies[i][0][1:]
		}
		size += bodies[i].Len() + 2
	}
	if form == formYAML {
		buf := bytes.NewBuffer(make([]byte, 0, size))
		writeListJSON(buf, head, bodies, tail)
		y, err := yaml.JSONToYAML(buf.Bytes())
		if err != nil {
			respond.Error(w, r, meta.NewInternalError(err))
			return
		}
		respond.Body(w, r, http.StatusOK, "application/yaml", y)
		return
	}
	// The items go out as they are, through a small buffer: no copy of
	// the whole list is made.
	if len(bodies) > 0 {
		size-- // no comma after the last item
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if respond.Compress(r, size) {
		// The items go through the compressor, which keeps its own
		// window: still no copy of the whole list.
		z := respond.StartGzip(w, http.StatusOK)
		writeListJSON(z, head, bodies, tail)
		_ = z.Close() // a failed write means the client went away
		return
	}
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	writeListJSON(bw, head, bodies, tail)
	_ = bw.Flush() // a failed write means the client went away
	bw.Reset(nil)
	listWriters.Put(bw)
}

// listWriters buffer list responses on their way to the connection, in
// writes of respond.WriteSize bytes (see there why that size).
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, respond.WriteSize) }}

// writeListJSON writes a list from its parts: head (up to the items' "["),
// the items' JSON without their opening "{", and the tail.
func writeListJSON(w io.Writer, head []byte, bodies []registry.JSONParts, tail string) {
	_, _ = w.Write(head)
	for i, b := range bodies {
		if i == 0 {
			_, _ = w.Write(itemStart[1:])
		} else {
			_, _ = w.Write(itemStart)
		}
		for _, part := range b {
			if len(part) > 0 {
				_, _ = w.Write(part)
			}
		}
	}
	_, _ = io.WriteString(w, tail)
}

var itemStart = []byte(",{")

// Get serves GET on a named object.
func (s *Scope) Get(w http.ResponseWriter, r *http.Request, ns, name string) {
	form, err := negotiate(r.Header.Get("Accept"), true)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	it, err := s.Resource.Get(r.Context(), ns, name, meta.ParseGetOptions(request.Query(r)))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeItem(w, r, http.StatusOK, it, form)
}

// List serves GET on a collection: a list, or a watch with ?watch=true.
func (s *Scope) List(w http.ResponseWriter, r *http.Request, ns string) {
	form, err := negotiate(r.Header.Get("Accept"), true)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	opts, err := meta.ParseListOptions(request.Query(r))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if opts.Watch {
		if form == formYAML {
			// YAML has no stream framing: kube-apiserver answers a YAML
			// watch 406 too, naming what it can stream.
			respond.Error(w, r, meta.NewNotAcceptable(watchOutputs))
			return
		}
		s.serveWatch(w, r, ns, opts, form)
		return
	}
	list, err := s.Resource.List(r.Context(), ns, opts)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeList(w, r, list, form)
}

// Create serves POST on a collection.
func (s *Scope) Create(w http.ResponseWriter, r *http.Request, ns string) {
	form, err := negotiate(r.Header.Get("Accept"), false)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	opts, err := meta.ParseCreateOptions(request.Query(r))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	obj, warnings, err := s.decodeBody(w, r, opts.FieldValidation)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.recordUpdate(r, nil, obj, opts.FieldManager, "")
	dryRun := len(opts.DryRun) > 0
	admit, validate := s.admissionFuncs(r.Context(), w, admission.Create, ns, "", "", dryRun)
	wo := registry.WriteOptions{DryRun: dryRun, Admit: admit, Validate: validate}
	it, err := s.Resource.Create(r.Context(), ns, obj, wo)
	if tooLarge(err) && obj.GetObjectMeta().ManagedFields != nil {
		obj.GetObjectMeta().ManagedFields = nil
		it, err = s.Resource.Create(r.Context(), ns, obj, wo)
	}
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	writeWarnings(w, warnings)
	s.writeItem(w, r, http.StatusCreated, it, form)
}

func (s *Scope) decodeBody(w http.ResponseWriter, r *http.Request, validation string) (meta.Object, []string, error) {
	body, err := readBody(w, r, s.MaxRequestBodyBytes)
	if err != nil {
		return nil, nil, err
	}
	var data []byte
	if pd, ok := s.Resource.(registry.ProtobufDecoder); ok && isProtobuf(r.Header.Get("Content-Type")) {
		data, err = pd.ProtobufToJSON(body)
	} else {
		data, err = toJSON(r.Header.Get("Content-Type"), body)
	}
	var ue *unparsableError
	if errors.As(err, &ue) {
		return nil, nil, unrecognized(s.gvk.Kind, ue.err, body)
	}
	if err != nil {
		return nil, nil, err
	}
	obj := s.Resource.New()
	warnings, err := decodeObject(data, obj, s.gvk, validation)
	if err == nil {
		s.setDefaults(obj)
	}
	return obj, warnings, err
}

// setDefaults applies the resource's defaults to a decoded body, before
// the field manager records the write (registry.Defaulting).
func (s *Scope) setDefaults(obj meta.Object) {
	if d, ok := s.Resource.(registry.Defaulting); ok {
		d.Default(obj)
	}
}

// Update serves PUT on a named object or its status.
func (s *Scope) Update(w http.ResponseWriter, r *http.Request, ns, name, subresource string) {
	form, err := negotiate(r.Header.Get("Accept"), false)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	opts, err := meta.ParseUpdateOptions(request.Query(r))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	obj, warnings, err := s.decodeBody(w, r, opts.FieldValidation)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	// As kube-apiserver's update handler: the body names the object it
	// replaces, and a body without a name does not match either.
	if n := obj.GetObjectMeta().Name; n != name {
		respond.Error(w, r, meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, name)))
		return
	}
	dryRun := len(opts.DryRun) > 0
	admit, validate := s.admissionFuncs(r.Context(), w, admission.Update, ns, name, subresource, dryRun)
	uo := registry.UpdateOptions{WriteOptions: registry.WriteOptions{DryRun: dryRun, Admit: admit, Validate: validate}, Subresource: subresource}
	// kube-apiserver makes the body's uid a precondition of the write: a
	// body of another object (deleted and created again) is a conflict.
	if uid := obj.GetObjectMeta().UID; uid != "" {
		uo.Preconditions = &meta.Preconditions{UID: &uid}
	}
	sent := obj.GetObjectMeta().ManagedFields
	withoutManaged := false
	update := func(_ context.Context, current meta.Object) (meta.Object, error) {
		// A retried update records against the object it now
		// replaces, from the managedFields the client sent.
		obj.GetObjectMeta().ManagedFields = sent
		if withoutManaged {
			obj.GetObjectMeta().ManagedFields = nil
		} else {
			s.recordUpdate(r, current, obj, opts.FieldManager, subresource)
		}
		return obj, nil
	}
	ctx := withValidationWarnings(r.Context(), w)
	it, created, err := s.Resource.Update(ctx, ns, name, update, uo)
	if tooLarge(err) {
		withoutManaged = true
		it, created, err = s.Resource.Update(ctx, ns, name, update, uo)
	}
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	writeWarnings(w, warnings)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	s.writeItem(w, r, code, it, form)
}

// Patch content types.
const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
)

var supportedPatchTypes = []string{jsonPatchType, mergePatchType, strategicPatchType, applyPatchType}

// MaxJSONPatchOperations is the most operations one JSON patch may hold, as
// in kube-apiserver (413 beyond).
const MaxJSONPatchOperations = 10000

// JSONPatchMaxCopyBytes bounds the bytes the copy operations of one JSON
// patch may add, kube-apiserver's default (422 beyond): without it a patch
// of a few self-doubling copies grows an object, and the server's memory,
// exponentially.
const JSONPatchMaxCopyBytes = 3 << 20

// jsonPatchOptions applies JSON patches with the copy limit.
var jsonPatchOptions = func() *jsonpatch.ApplyOptions {
	o := jsonpatch.NewApplyOptions()
	o.AccumulatedCopySizeLimit = JSONPatchMaxCopyBytes
	return o
}()

// Patch serves PATCH on a named object or its status: JSON patch, JSON
// merge patch, and strategic merge patch with the merge strategies of the
// Go type's patchStrategy and patchMergeKey tags, as k8s.io/apiserver
// serves it for its types (kubectl patch sends it by default), and
// server-side apply (apply.go).
func (s *Scope) Patch(w http.ResponseWriter, r *http.Request, ns, name, subresource string) {
	form, err := negotiate(r.Header.Get("Accept"), false)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	opts, err := meta.ParsePatchOptions(request.Query(r))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	ct := r.Header.Get("Content-Type")
	pt, _, _ := mime.ParseMediaType(ct)
	if pt == applyPatchType {
		s.apply(w, r, ns, name, subresource, opts, form)
		return
	}
	if pt != jsonPatchType && pt != mergePatchType && pt != strategicPatchType {
		respond.Error(w, r, meta.NewUnsupportedMediaType(ct, supportedPatchTypes))
		return
	}
	if err := validatePatchOptions(opts, false); err != nil {
		respond.Error(w, r, err)
		return
	}
	patch, err := readBody(w, r, s.MaxRequestBodyBytes)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	var decodedJSONPatch jsonpatch.Patch
	if pt == jsonPatchType {
		if decodedJSONPatch, err = jsonpatch.DecodePatch(patch); err != nil {
			respond.Error(w, r, meta.NewBadRequest("error decoding patch: "+err.Error()))
			return
		}
		if len(decodedJSONPatch) > MaxJSONPatchOperations {
			respond.Error(w, r, meta.NewRequestEntityTooLarge(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", MaxJSONPatchOperations, len(decodedJSONPatch))))
			return
		}
	} else if !json.Valid(patch) {
		// kube-apiserver's words: json-patch's error for a merge patch.
		msg := "error decoding patch: invalid JSON"
		if pt == mergePatchType {
			msg = "invalid JSON patch"
		}
		respond.Error(w, r, meta.NewBadRequest(msg))
		return
	}
	objType := reflect.TypeOf(s.Resource.New())
	dryRun := len(opts.DryRun) > 0
	admit, validate := s.admissionFuncs(r.Context(), w, admission.Update, ns, name, subresource, dryRun)
	var warnings []string
	withoutManaged := false
	update := func(_ context.Context, current meta.Object) (meta.Object, error) {
		if current == nil {
			return nil, meta.NewNotFound(s.groupResource(), name)
		}
		cur, err := registry.EncodeJSON(current)
		if err != nil {
			return nil, meta.NewInternalError(err)
		}
		var patched []byte
		switch pt {
		case jsonPatchType:
			patched, err = decodedJSONPatch.ApplyWithOptions(cur, jsonPatchOptions)
		case strategicPatchType:
			patched, err = strategicMergePatch(cur, patch, objType)
		default:
			patched, err = jsonpatch.MergePatch(cur, patch)
		}
		if err != nil {
			return nil, patchError(err)
		}
		if err := s.checkObjectSize(patched); err != nil {
			return nil, err
		}
		obj := s.Resource.New()
		if warnings, err = decodeObject(patched, obj, s.gvk, opts.FieldValidation); err != nil {
			return nil, err
		}
		s.setDefaults(obj)
		if withoutManaged {
			obj.GetObjectMeta().ManagedFields = nil
		} else {
			s.recordUpdate(r, current, obj, opts.FieldManager, subresource)
		}
		return obj, nil
	}
	uo := registry.UpdateOptions{WriteOptions: registry.WriteOptions{DryRun: dryRun, Admit: admit, Validate: validate}, Subresource: subresource}
	ctx := withValidationWarnings(r.Context(), w)
	it, _, err := s.Resource.Update(ctx, ns, name, update, uo)
	if tooLarge(err) {
		withoutManaged = true
		it, _, err = s.Resource.Update(ctx, ns, name, update, uo)
	}
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	writeWarnings(w, warnings)
	s.writeItem(w, r, http.StatusOK, it, form)
}

// checkObjectSize refuses the JSON of an object a patch produced when it is
// larger than MaxObjectBytes, before anything decodes it: every patch type
// passes here, so none can make the server hold more than the limit.
func (s *Scope) checkObjectSize(patched []byte) error {
	if int64(len(patched)) > s.MaxObjectBytes {
		return meta.NewRequestEntityTooLarge(fmt.Sprintf("limit is %d", s.MaxObjectBytes))
	}
	return nil
}

// patchError classifies a patch failure: a patch that does not apply to the
// object, or copies more than JSONPatchMaxCopyBytes, is unprocessable (422),
// anything else a bad request.
func patchError(err error) error {
	var bad errBadStrategicPatch
	if errors.As(err, &bad) {
		return meta.NewBadRequest(bad.Error())
	}
	var copySize *jsonpatch.AccumulatedCopySizeError
	unprocessable := errors.As(err, &copySize)
	for _, e := range []error{jsonpatch.ErrTestFailed, jsonpatch.ErrMissing, jsonpatch.ErrInvalidIndex, jsonpatch.ErrUnknownType, jsonpatch.ErrInvalid} {
		unprocessable = unprocessable || errors.Is(err, e)
	}
	if !unprocessable {
		return meta.NewBadRequest(err.Error())
	}
	se := meta.NewInvalid(meta.GroupKind{}, "", nil)
	se.ErrStatus.Message = "the server rejected our request due to an error in our request: " + err.Error()
	se.ErrStatus.Details = nil
	return se
}

// readDeleteOptions reads DeleteOptions from the body (kubectl's way) and the
// query (curl's way).
func (s *Scope) readDeleteOptions(w http.ResponseWriter, r *http.Request) (meta.DeleteOptions, error) {
	var o meta.DeleteOptions
	body, err := readBody(w, r, s.MaxRequestBodyBytes)
	if err != nil {
		return o, err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		data, err := toJSON(r.Header.Get("Content-Type"), body)
		if err != nil {
			return o, err
		}
		if err := json.Unmarshal(data, &o); err != nil {
			return o, meta.NewBadRequest(fmt.Sprintf("error decoding DeleteOptions: %v", err))
		}
	}
	if err := meta.ParseDeleteQuery(request.Query(r), &o); err != nil {
		return o, err
	}
	return o, nil
}

func (s *Scope) deleteOptions(ctx context.Context, w http.ResponseWriter, o meta.DeleteOptions, ns, name string) registry.DeleteOptions {
	dryRun := len(o.DryRun) > 0
	// The plugins see the options as kube-apiserver gives them to
	// admission: meta.k8s.io/v1 DeleteOptions, whichever version the
	// client sent.
	o.TypeMeta = meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}
	admit, validate := s.admissionFuncsWith(ctx, w, admission.Delete, ns, name, "", dryRun, &o)
	d := registry.DeleteOptions{
		DryRun:            dryRun,
		Preconditions:     o.Preconditions,
		PropagationPolicy: o.PropagationPolicy,
		OrphanDependents:  o.OrphanDependents,
		GarbageCollection: s.GarbageCollection,
	}
	if validate != nil {
		// kube-apiserver's AdmissionToValidateObjectDeleteFunc: the
		// mutating plugins, then the validating ones, each seeing the
		// object being deleted as the old object (a mutating webhook's
		// patch has nothing to change: refused).
		d.Validate = func(ctx context.Context, old meta.Object) error {
			if err := admit(ctx, nil, old); err != nil {
				return err
			}
			return validate(ctx, nil, old)
		}
	}
	return d
}

// Delete serves DELETE on a named object.
func (s *Scope) Delete(w http.ResponseWriter, r *http.Request, ns, name string) {
	form, err := negotiate(r.Header.Get("Accept"), false)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	o, err := s.readDeleteOptions(w, r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	it, deleted, err := s.Resource.Delete(r.Context(), ns, name, s.deleteOptions(r.Context(), w, o, ns, name))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if info := s.Resource.Info(); deleted && info.DeleteStatus {
		obj, err := it.Object()
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		respond.Object(w, r, http.StatusOK, deletedStatus(info, obj))
		return
	}
	s.writeItem(w, r, http.StatusOK, it, form)
}

// deletedStatus is kube-apiserver's answer to a delete that removed obj:
// a Status Success naming it by name, group, resource and uid.
func deletedStatus(info registry.ResourceInfo, obj meta.Object) meta.Status {
	m := obj.GetObjectMeta()
	return meta.Status{
		TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   meta.StatusSuccess,
		Details:  &meta.StatusDetails{Name: m.Name, Group: info.GroupVersion.Group, Kind: info.Resource, UID: m.UID},
	}
}

// DeleteCollection serves DELETE on a collection.
func (s *Scope) DeleteCollection(w http.ResponseWriter, r *http.Request, ns string) {
	form, err := negotiate(r.Header.Get("Accept"), false)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	lo, err := meta.ParseListOptions(request.Query(r))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	o, err := s.readDeleteOptions(w, r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	list, err := s.Resource.DeleteCollection(r.Context(), ns, lo, s.deleteOptions(r.Context(), w, o, ns, ""))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeList(w, r, list, form)
}

// serveWatch streams events as newline-separated JSON WatchEvents until the
// client goes away, the timeout passes, the server stops, or the watch
// fails (then an ERROR event carries the Status).
func (s *Scope) serveWatch(w http.ResponseWriter, r *http.Request, ns string, opts meta.ListOptions, form outputForm) {
	timeout := time.Duration(float64(s.MinRequestTimeout) * (rand.Float64() + 1))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	events, err := s.Resource.Watch(ctx, ns, opts)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds < 0 {
		// kube-apiserver arms its watch timer with the negative timeout,
		// which fires at once: 200 and an empty stream.
		request.SignalWatchInit(r.Context())
		return
	}
	// Flow control holds the watch's seats until its initial events are
	// sent: with sendInitialEvents, until the bookmark that ends them;
	// for the legacy watch from "" or "0", until no event is at hand
	// (the current state comes at once); from a revision, none.
	initEnd := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	legacyInit := !initEnd && (opts.ResourceVersion == "" || opts.ResourceVersion == "0") &&
		(opts.SendInitialEvents == nil || *opts.SendInitialEvents)
	if !initEnd && !legacyInit {
		request.SignalWatchInit(r.Context())
	}
	var buf bytes.Buffer
	sent := metrics.From(r.Context()).WatchEventsOf(s.gvk.Group, s.gvk.Version, s.gvk.Kind)
	// Only the first Table of a watch carries the column definitions.
	tableHeadersSent := false
	for {
		var ev registry.WatchEvent
		var ok bool
		if legacyInit {
			select {
			case ev, ok = <-events:
			default:
				legacyInit = false
				request.SignalWatchInit(r.Context())
			}
		}
		if !ok {
			select {
			case ev, ok = <-events:
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			case <-s.StopWatches:
				return
			}
		}
		initEnded := initEnd && ev.Type == meta.Bookmark && initialEventsEnd(ev.Item)
		if initEnded && !opts.AllowWatchBookmarks {
			// kube-apiserver sends the bookmark that ends the initial
			// events only to a client that allows bookmarks.
			initEnd = false
			request.SignalWatchInit(r.Context())
			continue
		}
		buf.Reset()
		table, err := s.encodeEvent(&buf, r, ev, form, tableHeadersSent)
		if err != nil {
			ev = registry.WatchEvent{Type: meta.Error, Err: err}
			buf.Reset()
			_, _ = s.encodeEvent(&buf, r, ev, form, tableHeadersSent)
		}
		tableHeadersSent = tableHeadersSent || table
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		sent.Sent(buf.Len())
		if flusher != nil && len(events) == 0 {
			flusher.Flush()
		}
		if initEnded {
			initEnd = false
			request.SignalWatchInit(r.Context())
		}
		if ev.Type == meta.Error {
			return
		}
	}
}

// initialEventsEnd reports whether a bookmark ends the initial events.
func initialEventsEnd(it registry.Item) bool {
	obj, err := it.Object()
	return err == nil && obj != nil && obj.GetObjectMeta().Annotations[meta.InitialEventsAnnotation] == "true"
}

// encodeEvent writes ev as a line of the watch stream, a Table without
// column definitions when noHeaders is set; it reports whether it wrote a
// Table.
func (s *Scope) encodeEvent(buf *bytes.Buffer, r *http.Request, ev registry.WatchEvent, form outputForm, noHeaders bool) (table bool, err error) {
	var obj []byte
	switch {
	case ev.Type == meta.Error:
		obj, err = registry.EncodeJSON(meta.StatusOf(ev.Err))
	case ev.Type == meta.Bookmark && form != formPartialMetadata:
		// A bookmark is an empty object with a resourceVersion; a Table
		// of it would be a row without a name, so it goes as it is.
		obj, err = ev.Item.JSON()
	default:
		obj, _, err = s.encodeItemHeaders(r, ev.Item, form, nil, noHeaders)
		table = form == formTable
	}
	if err != nil {
		return false, err
	}
	buf.WriteString(`{"type":"`)
	buf.WriteString(string(ev.Type))
	buf.WriteString(`","object":`)
	buf.Write(obj)
	buf.WriteString("}\n")
	return table, nil
}
