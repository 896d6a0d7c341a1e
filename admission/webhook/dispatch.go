package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/uuid"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/audit"
	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/storage"
)

// The plugin names, kube-apiserver's.
const (
	MutatingPluginName   = "MutatingAdmissionWebhook"
	ValidatingPluginName = "ValidatingAdmissionWebhook"
)

// maxResponseBytes bounds a webhook's answer: a patch may rewrite an
// object of the largest size storage takes, JSON-escaped in base64.
const maxResponseBytes = 4*storage.DefaultMaxObjectBytes/3 + 64<<10

// NamespaceLabels looks up a namespace's labels for namespaceSelectors;
// the server that serves namespaces provides one.
type NamespaceLabels = admission.NamespaceLabels

// MatchConditions evaluates a webhook's matchConditions (CEL) against the
// AdmissionRequest it would be sent: true when all hold. NewCELMatchConditions
// is package cel's.
type MatchConditions interface {
	Match(ctx context.Context, conditions []registration.MatchCondition, req *AdmissionRequest) (bool, error)
}

// Config configures the webhook plugins.
type Config struct {
	// Source holds the configurations in effect. Required.
	Source *Source
	// ServiceResolver reaches webhooks named by a Service; nil fails them.
	ServiceResolver ServiceResolver
	// Credentials are presented to the webhooks; nil presents none.
	Credentials *Credentials
	// Namespaces gives namespace labels to namespaceSelectors; nil finds
	// every namespace unlabelled (a server that serves no namespaces).
	Namespaces NamespaceLabels
	// MatchConditions evaluates matchConditions; without one a webhook
	// that has them fails to be called (its failurePolicy decides).
	MatchConditions MatchConditions
	// MaxObjectBytes bounds a patched object; zero means
	// storage.DefaultMaxObjectBytes.
	MaxObjectBytes int
	// SyncTimeout is how long a write waits for the Source to sync before
	// it is refused; zero means 10 s.
	SyncTimeout time.Duration
	Logger      *slog.Logger
}

// Webhooks dispatches writes to the webhooks of a Source.
type Webhooks struct {
	cfg     Config
	clients *clients
	log     *slog.Logger
}

// New returns the dispatcher of cfg.
func New(cfg Config) (*Webhooks, error) {
	if cfg.Source == nil {
		return nil, errors.New("admission webhooks: no Source")
	}
	if cfg.MaxObjectBytes <= 0 {
		cfg.MaxObjectBytes = storage.DefaultMaxObjectBytes
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Webhooks{cfg: cfg, clients: &clients{resolver: cfg.ServiceResolver, creds: cfg.Credentials}, log: log}, nil
}

// Mutating returns the MutatingAdmissionWebhook plugin.
func (w *Webhooks) Mutating() *Mutating { return &Mutating{w: w} }

// Validating returns the ValidatingAdmissionWebhook plugin.
func (w *Webhooks) Validating() *Validating { return &Validating{w: w} }

// Mutating is the MutatingAdmissionWebhook plugin.
type Mutating struct{ w *Webhooks }

// Validating is the ValidatingAdmissionWebhook plugin.
type Validating struct{ w *Webhooks }

// Name returns the plugin's name.
func (*Mutating) Name() string { return MutatingPluginName }

// Name returns the plugin's name.
func (*Validating) Name() string { return ValidatingPluginName }

// Handles reports that webhooks may match every operation.
func (*Mutating) Handles(admission.Operation) bool { return true }

// Handles reports that webhooks may match every operation.
func (*Validating) Handles(admission.Operation) bool { return true }

// waitSynced waits for the Source, as kube-apiserver's plugins wait for
// their informers.
func (w *Webhooks) waitSynced(ctx context.Context, a *admission.Attributes) error {
	select {
	case <-w.cfg.Source.Synced():
		return nil
	default:
	}
	t := time.NewTimer(w.cfg.SyncTimeout)
	defer t.Stop()
	select {
	case <-w.cfg.Source.Synced():
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return meta.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("not yet ready to handle request"))
}

// invocation is a webhook matched to a request, in the version it asked for.
type invocation struct {
	h        *hook
	kind     meta.GroupVersionKind
	resource meta.GroupVersionResource
	// toVersion and toStorage convert between the storage version and the
	// invocation's; nil when it is the request's version.
	toVersion, toStorage func(meta.Object) (meta.Object, error)
	equivalent           bool
}

// callError is kube-apiserver's ErrCallingWebhook: the webhook gave no
// usable answer, and its failurePolicy decides.
type callError struct {
	name   string
	reason error
}

func (e *callError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.name, e.reason)
}

// Admit calls the matching mutating webhooks in order, applying their
// patches; webhooks with reinvocationPolicy IfNeeded called before a later
// one changed the object are called once more.
func (m *Mutating) Admit(ctx context.Context, a *admission.Attributes) error {
	w := m.w
	hooks := w.cfg.Source.hooks(true)
	if len(hooks) == 0 {
		if err := w.waitSynced(ctx, a); err != nil {
			return err
		}
		if hooks = w.cfg.Source.hooks(true); len(hooks) == 0 {
			return nil
		}
	}
	var invoked []*hook
	reinvoke := map[string]bool{}
	for round := 0; round < 2; round++ {
		for i, h := range hooks {
			if round == 1 && !reinvoke[h.key] {
				continue
			}
			inv, err := w.match(ctx, h, a)
			if err != nil {
				return err
			}
			if inv == nil {
				continue
			}
			changed, err := w.callMutating(ctx, inv, a, round, i)
			if err != nil {
				return err
			}
			if round == 0 {
				if changed {
					for _, p := range invoked {
						if p.reinvokeIfNeeded {
							reinvoke[p.key] = true
						}
					}
				}
				invoked = append(invoked, h)
			}
		}
		if len(reinvoke) == 0 {
			break
		}
	}
	return nil
}

// Validate calls the matching validating webhooks in parallel; the first
// refusal (in the webhooks' order) refuses the write.
func (v *Validating) Validate(ctx context.Context, a *admission.Attributes) error {
	w := v.w
	hooks := w.cfg.Source.hooks(false)
	if len(hooks) == 0 {
		if err := w.waitSynced(ctx, a); err != nil {
			return err
		}
		if hooks = w.cfg.Source.hooks(false); len(hooks) == 0 {
			return nil
		}
	}
	var invs []*invocation
	var idx []int
	for i, h := range hooks {
		inv, err := w.match(ctx, h, a)
		if err != nil {
			return err
		}
		if inv != nil {
			invs = append(invs, inv)
			idx = append(idx, i)
		}
	}
	errs := make([]error, len(invs))
	var wg sync.WaitGroup
	for j, inv := range invs {
		wg.Go(func() { errs[j] = w.callValidating(ctx, inv, a, idx[j]) })
	}
	wg.Wait()
	return errors.Join(firstNonNil(errs))
}

func firstNonNil(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// callMutating calls one mutating webhook and applies its patch.
func (w *Webhooks) callMutating(ctx context.Context, inv *invocation, a *admission.Attributes, round, index int) (bool, error) {
	h := inv.h
	obj, old, err := inv.objects(a)
	if err != nil {
		return false, err
	}
	annotation := fmt.Sprintf("round_%d_index_%d", round, index)
	req, objJSON, call, err := w.prepare(ctx, inv, a, obj, old)
	if err != nil || !call {
		return false, w.failure(ctx, inv, a, err, "mutating", annotation)
	}
	start := time.Now()
	resp, err := w.call(ctx, inv, req, true)
	observeCall(ctx, inv, a, metrics.AdmissionAdmit, start, resp, err)
	if err != nil {
		return false, w.failure(ctx, inv, a, err, "mutating", annotation)
	}
	w.report(ctx, h, resp)
	if !resp.Allowed {
		return false, denied(h.name, resp.Result)
	}
	changed, err := w.applyPatch(inv, a, obj, objJSON, resp.Patch)
	if err != nil {
		return false, err
	}
	mutation, _ := json.Marshal(map[string]any{"configuration": h.config, "webhook": h.name, "mutated": changed})
	audit.AddAnnotation(ctx, "mutation.webhook.admission.k8s.io/"+annotation, string(mutation))
	return changed, nil
}

// callValidating calls one validating webhook.
func (w *Webhooks) callValidating(ctx context.Context, inv *invocation, a *admission.Attributes, index int) error {
	h := inv.h
	obj, old, err := inv.objects(a)
	if err != nil {
		return err
	}
	annotation := fmt.Sprintf("round_0_index_%d", index)
	req, _, call, err := w.prepare(ctx, inv, a, obj, old)
	if err != nil || !call {
		return w.failure(ctx, inv, a, err, "validating", annotation)
	}
	start := time.Now()
	resp, err := w.call(ctx, inv, req, false)
	observeCall(ctx, inv, a, metrics.AdmissionValidate, start, resp, err)
	if err != nil {
		return w.failure(ctx, inv, a, err, "validating", annotation)
	}
	w.report(ctx, h, resp)
	if !resp.Allowed {
		return denied(h.name, resp.Result)
	}
	return nil
}

// failure applies the webhook's failurePolicy to a failed call: Ignore
// lets the write pass (logged and audited), Fail refuses it with 500.
func (w *Webhooks) failure(ctx context.Context, inv *invocation, a *admission.Attributes, err error, kind, annotation string) error {
	if err == nil {
		return nil
	}
	var ce *callError
	if !errors.As(err, &ce) {
		return err
	}
	step := metrics.AdmissionValidate
	if kind == "mutating" {
		step = metrics.AdmissionAdmit
	}
	if inv.h.failOpen {
		metrics.From(ctx).ObserveAdmissionWebhookFailOpen(inv.h.name, step)
		w.log.Warn("failed calling webhook, failing open", "webhook", inv.h.name, "err", err)
		audit.AddAnnotation(ctx, "failed-open."+kind+".webhook.admission.k8s.io/"+annotation, inv.h.name)
		return nil
	}
	metrics.From(ctx).ObserveAdmissionWebhookRejection(inv.h.name, step, string(a.Operation), metrics.WebhookCallingError, 0)
	return meta.NewInternalError(err)
}

// observeCall records a webhook call under kube-apiserver's
// apiserver_admission_webhook_* metrics: its latency and answer, and a
// denial as a rejection with the denial's code. A call that failed is
// counted as a rejection (or a fail-open) by failure, once its
// failurePolicy is applied.
func observeCall(ctx context.Context, inv *invocation, a *admission.Attributes, step string, start time.Time, resp *AdmissionResponse, err error) {
	m := metrics.From(ctx)
	if m == nil {
		return
	}
	op, elapsed := string(a.Operation), time.Since(start)
	switch {
	case err != nil:
		m.ObserveAdmissionWebhook(inv.h.name, step, op, true, 0, elapsed)
	case !resp.Allowed:
		code := http.StatusBadRequest
		if resp.Result != nil && resp.Result.Code >= http.StatusBadRequest {
			code = int(resp.Result.Code)
		}
		m.ObserveAdmissionWebhook(inv.h.name, step, op, true, http.StatusOK, elapsed)
		m.ObserveAdmissionWebhookRejection(inv.h.name, step, op, metrics.WebhookNoError, code)
	default:
		m.ObserveAdmissionWebhook(inv.h.name, step, op, false, http.StatusOK, elapsed)
	}
}

// report passes the webhook's warnings and audit annotations on.
func (w *Webhooks) report(ctx context.Context, h *hook, resp *AdmissionResponse) {
	for k, v := range resp.AuditAnnotations {
		audit.AddAnnotation(ctx, h.name+"/"+k, v)
	}
	for _, msg := range resp.Warnings {
		admission.AddWarning(ctx, msg)
	}
}

// dryRunUnsupported is kube-apiserver's refusal of a dry run for a webhook
// that may have side effects.
func dryRunUnsupported(name string) error {
	return meta.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", name))
}

// denied is kube-apiserver's ToStatusErr: the webhook's Status, at least
// a 400 Failure, its message prefixed with who denied.
func denied(name string, result *meta.Status) error {
	st := meta.Status{}
	if result != nil {
		st = *result
	}
	st.TypeMeta = meta.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == meta.StatusSuccess {
		st.Status = meta.StatusFailure
	}
	by := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = by + ": " + st.Message
	case st.Reason != "":
		st.Message = by + ": " + string(st.Reason)
	default:
		st.Message = by + " without explanation"
	}
	return &meta.StatusError{ErrStatus: st}
}

// objects returns the object and old object in the invocation's version.
func (inv *invocation) objects(a *admission.Attributes) (obj, old meta.Object, err error) {
	if !inv.equivalent {
		return a.VersionedObject, a.VersionedOldObject, nil
	}
	conv := func(o meta.Object) (meta.Object, error) {
		if o == nil || inv.toVersion == nil {
			return o, nil
		}
		v, err := inv.toVersion(o)
		if err != nil {
			return nil, meta.NewInternalError(fmt.Errorf("converting to %s: %w", inv.kind.GroupVersion(), err))
		}
		return v, nil
	}
	if obj, err = conv(a.Object); err != nil {
		return nil, nil, err
	}
	old, err = conv(a.OldObject)
	return obj, old, err
}

// prepare builds the AdmissionRequest of an invocation and decides, by
// the webhook's matchConditions, whether it is called; a dry run to a
// webhook with side effects is refused. It returns the object's JSON as
// sent.
func (w *Webhooks) prepare(ctx context.Context, inv *invocation, a *admission.Attributes, obj, old meta.Object) (*AdmissionRequest, []byte, bool, error) {
	h := inv.h
	req, objJSON, err := newRequest(inv, a, obj, old)
	if err != nil {
		return nil, nil, false, meta.NewInternalError(err)
	}
	if len(h.matchConditions) > 0 {
		if w.cfg.MatchConditions == nil {
			return nil, nil, false, &callError{name: h.name, reason: errors.New("match conditions cannot be evaluated: this server has no CEL evaluator")}
		}
		ok, err := w.cfg.MatchConditions.Match(ctx, h.matchConditions, req)
		if err != nil {
			return nil, nil, false, &callError{name: h.name, reason: err}
		}
		if !ok {
			return nil, nil, false, nil
		}
	}
	if a.DryRun && !h.noSideEffects {
		return nil, nil, false, dryRunUnsupported(h.name)
	}
	return req, objJSON, true, nil
}

// call sends the AdmissionReview and checks the answer.
func (w *Webhooks) call(ctx context.Context, inv *invocation, req *AdmissionRequest, mutating bool) (*AdmissionResponse, error) {
	h := inv.h
	fail := func(format string, args ...any) error {
		return &callError{name: h.name, reason: fmt.Errorf(format, args...)}
	}
	body, err := json.Marshal(AdmissionReview{TypeMeta: meta.TypeMeta{APIVersion: ReviewGroupVersion, Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		return nil, meta.NewInternalError(err)
	}
	t, err := w.clients.targetFor(&h.clientConfig, int(h.timeout/time.Second))
	if err != nil {
		return nil, fail("%w", err)
	}
	callCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var review AdmissionReview
	if err := iwebhook.Post(callCtx, t.http, iwebhook.Request{URL: t.url, Token: t.token, Body: body, MaxResponseBytes: maxResponseBytes}, &review); err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	if err := verifyResponse(&review, req.UID, mutating); err != nil {
		return nil, fail("received invalid webhook response: %w", err)
	}
	return review.Response, nil
}

// verifyResponse is kube-apiserver's VerifyAdmissionResponse for v1.
func verifyResponse(r *AdmissionReview, uid string, mutating bool) error {
	if r.Response == nil {
		return errors.New("webhook response was absent")
	}
	if r.Response.UID != uid {
		return fmt.Errorf("expected response.uid=%q, got %q", uid, r.Response.UID)
	}
	if r.APIVersion != ReviewGroupVersion || r.Kind != "AdmissionReview" {
		return fmt.Errorf("expected webhook response of %s, Kind=AdmissionReview, got %s", ReviewGroupVersion, gvkString(r.APIVersion, r.Kind))
	}
	patchType := ""
	if r.Response.PatchType != nil {
		patchType = *r.Response.PatchType
	}
	if patchType != "" {
		if !mutating {
			return errors.New("validating webhook may not return response.patchType")
		}
		if patchType != PatchTypeJSONPatch {
			return fmt.Errorf("webhook returned invalid response.patchType of %q", patchType)
		}
	}
	if len(r.Response.Patch) > 0 {
		if !mutating {
			return errors.New("validating webhook may not return response.patch")
		}
		if patchType == "" {
			return errors.New("webhook returned response.patch but not response.patchType")
		}
	}
	return nil
}

// gvkString formats apiVersion and kind as schema.GroupVersionKind's String.
func gvkString(apiVersion, kind string) string {
	gv, err := meta.ParseGroupVersion(apiVersion)
	if err != nil {
		return apiVersion + ", Kind=" + kind
	}
	return gv.Group + "/" + gv.Version + ", Kind=" + kind
}

// newRequest builds the AdmissionRequest of one invocation.
func newRequest(inv *invocation, a *admission.Attributes, obj, old meta.Object) (*AdmissionRequest, []byte, error) {
	req := requestOf(inv, a)
	var objJSON []byte
	var err error
	if obj != nil {
		if objJSON, err = encode(obj, inv.kind); err != nil {
			return nil, nil, fmt.Errorf("encoding the object: %w", err)
		}
		req.Object = objJSON
	}
	if old != nil {
		if req.OldObject, err = encode(old, inv.kind); err != nil {
			return nil, nil, fmt.Errorf("encoding the old object: %w", err)
		}
	}
	if o := options(a); o != nil {
		if req.Options, err = json.Marshal(o); err != nil {
			return nil, nil, fmt.Errorf("encoding the options: %w", err)
		}
	}
	return req, objJSON, nil
}

// requestOf is the AdmissionRequest of an invocation without its objects
// and options.
func requestOf(inv *invocation, a *admission.Attributes) *AdmissionRequest {
	dryRun := a.DryRun
	req := &AdmissionRequest{
		UID:                uuid.NewString(),
		Kind:               GroupVersionKind{inv.kind.Group, inv.kind.Version, inv.kind.Kind},
		Resource:           GroupVersionResource{inv.resource.Group, inv.resource.Version, inv.resource.Resource},
		SubResource:        a.Subresource,
		RequestKind:        &GroupVersionKind{a.Kind.Group, a.Kind.Version, a.Kind.Kind},
		RequestResource:    &GroupVersionResource{a.Resource.Group, a.Resource.Version, a.Resource.Resource},
		RequestSubResource: a.Subresource,
		Name:               a.Name,
		Namespace:          a.Namespace,
		Operation:          string(a.Operation),
		DryRun:             &dryRun,
	}
	if u := a.User; u != nil {
		req.UserInfo = UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	return req
}

// defaultOptions are the options of a write whose client sent none.
type defaultOptions struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	DryRun     []string `json:"dryRun,omitempty"`
}

// options are a's options as the request carries them: the client's, or
// the operation's defaults; nil when the operation has none.
func options(a *admission.Attributes) any {
	if a.Options != nil {
		return a.Options
	}
	kind := optionsKind(a.Operation)
	if kind == "" {
		return nil
	}
	o := &defaultOptions{Kind: kind, APIVersion: "meta.k8s.io/v1"}
	if a.DryRun {
		o.DryRun = []string{"All"}
	}
	return o
}

// encode returns obj's JSON with its apiVersion and kind, which objects
// held in memory may lack; kind is its version's.
func encode(obj meta.Object, kind meta.GroupVersionKind) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil || obj.GetTypeMeta().Kind != "" {
		return data, err
	}
	if len(data) < 2 || data[0] != '{' {
		return nil, fmt.Errorf("an object of type %T does not encode as a JSON object", obj)
	}
	tm, err := json.Marshal(meta.TypeMeta{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind})
	if err != nil {
		return nil, err
	}
	out := tm[:len(tm)-1] // without its '}'
	if len(data) > 2 {
		out = append(out, ',')
	}
	return append(out, data[1:]...), nil
}

func optionsKind(op admission.Operation) string {
	switch op {
	case admission.Create:
		return "CreateOptions"
	case admission.Update:
		return "UpdateOptions"
	case admission.Delete:
		return "DeleteOptions"
	}
	return ""
}

// applyPatch applies a mutating webhook's JSONPatch to the object it was
// sent, decodes the result into a new object of its type and puts it, in
// the storage version, in place of a.Object. It reports whether the object
// changed.
func (w *Webhooks) applyPatch(inv *invocation, a *admission.Attributes, obj meta.Object, objJSON, patch []byte) (bool, error) {
	if len(patch) == 0 {
		return false, nil
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return false, meta.NewInternalError(err)
	}
	if len(p) == 0 {
		return false, nil
	}
	if obj == nil {
		return false, meta.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", inv.h.name))
	}
	opts := jsonpatch.NewApplyOptions()
	opts.AccumulatedCopySizeLimit = int64(w.cfg.MaxObjectBytes)
	patched, err := p.ApplyWithOptions(objJSON, opts)
	if err != nil {
		return false, meta.NewInternalError(err)
	}
	if len(patched) > w.cfg.MaxObjectBytes {
		return false, meta.NewInternalError(fmt.Errorf("admission webhook %q made the object larger than %d bytes", inv.h.name, w.cfg.MaxObjectBytes))
	}
	typ := reflect.TypeOf(obj)
	if typ.Kind() != reflect.Pointer {
		return false, meta.NewInternalError(fmt.Errorf("cannot patch an object of type %v", typ))
	}
	decoded := reflect.New(typ.Elem()).Interface().(meta.Object)
	if err := json.Unmarshal(patched, decoded); err != nil {
		return false, meta.NewInternalError(fmt.Errorf("decoding the object admission webhook %q patched: %w", inv.h.name, err))
	}
	if tm := decoded.GetTypeMeta(); tm.APIVersion != inv.kind.GroupVersion().String() || tm.Kind != inv.kind.Kind {
		return false, meta.NewInternalError(fmt.Errorf("admission webhook %q changed the object's apiVersion or kind", inv.h.name))
	}
	again, err := encode(decoded, inv.kind)
	if err != nil {
		return false, meta.NewInternalError(err)
	}
	if bytes.Equal(again, objJSON) {
		return false, nil
	}
	toStorage := a.ToStorage
	if inv.equivalent {
		toStorage = inv.toStorage
	}
	stored := decoded
	if toStorage != nil {
		if stored, err = toStorage(decoded); err != nil {
			return false, meta.NewInternalError(fmt.Errorf("converting the patched object: %w", err))
		}
	}
	dst, src := reflect.ValueOf(a.Object), reflect.ValueOf(stored)
	if dst.Type() != src.Type() {
		return false, meta.NewInternalError(fmt.Errorf("the patched object is a %v, not a %v", src.Type(), dst.Type()))
	}
	dst.Elem().Set(src.Elem())
	// The next webhook sees this one's change in the requested version.
	if a.ToVersion == nil {
		a.VersionedObject = a.Object
	} else if a.VersionedObject, err = a.ToVersion(a.Object); err != nil {
		return false, meta.NewInternalError(err)
	}
	return true, nil
}
