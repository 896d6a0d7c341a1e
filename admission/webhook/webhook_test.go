package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
	"github.com/apikit-dev/apikit/meta"
)

// widget is the object the tests admit.
type widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		Size int `json:"size"`
	} `json:"spec"`
}

// webhookServer is a TLS webhook answering with answer; it counts calls
// and TLS handshakes.
type webhookServer struct {
	*httptest.Server
	caBundle   []byte
	calls      atomic.Int32
	handshakes atomic.Int32
	mu         sync.Mutex
	requests   []*AdmissionRequest
}

func newWebhookServer(t testing.TB, answer func(req *AdmissionRequest, resp *AdmissionResponse)) *webhookServer {
	t.Helper()
	ws := &webhookServer{}
	ws.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws.calls.Add(1)
		var review AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		ws.mu.Lock()
		ws.requests = append(ws.requests, review.Request)
		ws.mu.Unlock()
		resp := &AdmissionResponse{UID: review.Request.UID, Allowed: true}
		answer(review.Request, resp)
		review.Request, review.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	ws.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		ws.handshakes.Add(1)
		return nil, nil
	}}
	ws.StartTLS()
	t.Cleanup(ws.Close)
	ws.caBundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ws.Certificate().Raw})
	return ws
}

func (ws *webhookServer) lastRequest() *AdmissionRequest {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.requests) == 0 {
		return nil
	}
	return ws.requests[len(ws.requests)-1]
}

var widgets = meta.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func rules(ops ...registration.OperationType) []registration.RuleWithOperations {
	return []registration.RuleWithOperations{{Operations: ops, Rule: registration.Rule{
		APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}}
}

// hookOf returns a validating webhook configuration of one webhook at
// ws's path.
func validatingOf(ws *webhookServer, name string, change func(*registration.ValidatingWebhook)) *registration.ValidatingWebhookConfiguration {
	h := registration.ValidatingWebhook{Name: name, Rules: rules(registration.OperationAll),
		ClientConfig: registration.WebhookClientConfig{URL: ptr(ws.URL + "/" + name), CABundle: ws.caBundle},
		SideEffects:  ptr(registration.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
	if change != nil {
		change(&h)
	}
	c := &registration.ValidatingWebhookConfiguration{ObjectMeta: meta.ObjectMeta{Name: name}, Webhooks: []registration.ValidatingWebhook{h}}
	registration.SetValidatingDefaults(c)
	return c
}

func mutatingOf(ws *webhookServer, name string, change func(*registration.MutatingWebhook)) *registration.MutatingWebhookConfiguration {
	h := registration.MutatingWebhook{Name: name, Rules: rules(registration.OperationAll),
		ClientConfig: registration.WebhookClientConfig{URL: ptr(ws.URL + "/" + name), CABundle: ws.caBundle},
		SideEffects:  ptr(registration.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
	if change != nil {
		change(&h)
	}
	c := &registration.MutatingWebhookConfiguration{ObjectMeta: meta.ObjectMeta{Name: name}, Webhooks: []registration.MutatingWebhook{h}}
	registration.SetMutatingDefaults(c)
	return c
}

func ptr[T any](v T) *T { return &v }

func newPlugins(t testing.TB, m []*registration.MutatingWebhookConfiguration, v []*registration.ValidatingWebhookConfiguration) (*Mutating, *Validating) {
	t.Helper()
	src := NewSource()
	src.SetMutating(m)
	src.SetValidating(v)
	w, err := New(Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return w.Mutating(), w.Validating()
}

func attrs(op admission.Operation, labels map[string]string) *admission.Attributes {
	obj := &widget{ObjectMeta: meta.ObjectMeta{Name: "w1", Namespace: "default", Labels: labels}}
	obj.Spec.Size = 3
	a := &admission.Attributes{Operation: op, Kind: widgets.GroupVersion().WithKind("Widget"), Resource: widgets,
		Namespace: "default", Name: "w1", Object: obj, VersionedObject: obj,
		User: &authn.User{Name: "alice", Groups: []string{"dev"}}}
	return a
}

func TestValidatingWebhooks(t *testing.T) {
	deny := newWebhookServer(t, func(req *AdmissionRequest, resp *AdmissionResponse) {
		resp.Allowed = false
		resp.Result = &meta.Status{Message: "widgets are not welcome", Code: 403, Reason: meta.StatusReasonForbidden}
	})
	allow := newWebhookServer(t, func(req *AdmissionRequest, resp *AdmissionResponse) {
		resp.Warnings = []string{"careful"}
	})
	slow := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) { time.Sleep(3 * time.Second) })
	down := httptest.NewUnstartedServer(http.NotFoundHandler())
	down.StartTLS()
	downURL, downCA := down.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: down.Certificate().Raw})
	down.Close()
	downHook := func(fp registration.FailurePolicyType) func(*registration.ValidatingWebhook) {
		return func(h *registration.ValidatingWebhook) {
			h.ClientConfig = registration.WebhookClientConfig{URL: ptr(downURL + "/down"), CABundle: downCA}
			h.FailurePolicy = &fp
		}
	}
	badUID := newWebhookServer(t, func(_ *AdmissionRequest, resp *AdmissionResponse) { resp.UID = "other" })

	for _, tc := range []struct {
		name      string
		configs   []*registration.ValidatingWebhookConfiguration
		labels    map[string]string
		dryRun    bool
		wantCode  int32
		wantMsg   string
		wantWarns []string
	}{{
		name:     "a webhook denies",
		configs:  []*registration.ValidatingWebhookConfiguration{validatingOf(allow, "allow.example.com", nil), validatingOf(deny, "deny.example.com", nil)},
		wantCode: 403, wantMsg: `admission webhook "deny.example.com" denied the request: widgets are not welcome`,
		wantWarns: []string{"careful"},
	}, {
		name: "rules that do not match",
		configs: []*registration.ValidatingWebhookConfiguration{validatingOf(deny, "deny.example.com", func(h *registration.ValidatingWebhook) {
			h.Rules = rules(registration.Delete)
		})},
	}, {
		name: "objectSelector that does not match",
		configs: []*registration.ValidatingWebhookConfiguration{validatingOf(deny, "deny.example.com", func(h *registration.ValidatingWebhook) {
			h.ObjectSelector = &meta.LabelSelector{MatchLabels: map[string]string{"check": "yes"}}
		})},
		labels: map[string]string{"check": "no"},
	}, {
		name: "objectSelector that matches",
		configs: []*registration.ValidatingWebhookConfiguration{validatingOf(deny, "deny.example.com", func(h *registration.ValidatingWebhook) {
			h.ObjectSelector = &meta.LabelSelector{MatchLabels: map[string]string{"check": "yes"}}
		})},
		labels:   map[string]string{"check": "yes"},
		wantCode: 403, wantMsg: `admission webhook "deny.example.com" denied the request: widgets are not welcome`,
	}, {
		name:     "down with failurePolicy Fail",
		configs:  []*registration.ValidatingWebhookConfiguration{validatingOf(deny, "down.example.com", downHook(registration.Fail))},
		wantCode: 500, wantMsg: `Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "` + downURL + `/down?timeout=10s": dial tcp`,
	}, {
		name:    "down with failurePolicy Ignore",
		configs: []*registration.ValidatingWebhookConfiguration{validatingOf(deny, "down.example.com", downHook(registration.Ignore))},
	}, {
		name: "slow: timeoutSeconds honoured",
		configs: []*registration.ValidatingWebhookConfiguration{validatingOf(slow, "slow.example.com", func(h *registration.ValidatingWebhook) {
			h.TimeoutSeconds = ptr(int32(1))
		})},
		wantCode: 500, wantMsg: `Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: Post "` + slow.URL + `/slow.example.com?timeout=1s": context deadline exceeded`,
	}, {
		name:     "an answer for another request",
		configs:  []*registration.ValidatingWebhookConfiguration{validatingOf(badUID, "uid.example.com", nil)},
		wantCode: 500, wantMsg: `Internal error occurred: failed calling webhook "uid.example.com": received invalid webhook response: expected response.uid=`,
	}, {
		name: "dry run to a webhook with side effects",
		configs: []*registration.ValidatingWebhookConfiguration{validatingOf(allow, "effects.example.com", func(h *registration.ValidatingWebhook) {
			h.SideEffects = ptr(registration.SideEffectClassUnknown)
		})},
		dryRun:   true,
		wantCode: 400, wantMsg: `admission webhook "effects.example.com" does not support dry run`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, v := newPlugins(t, nil, tc.configs)
			var warns []string
			var mu sync.Mutex
			ctx := admission.WithWarnings(context.Background(), func(m string) { mu.Lock(); warns = append(warns, m); mu.Unlock() })
			a := attrs(admission.Create, tc.labels)
			a.DryRun = tc.dryRun
			start := time.Now()
			err := v.Validate(ctx, a)
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
			} else {
				st := meta.StatusOf(err)
				if err == nil || st.Code != tc.wantCode || !strings.HasPrefix(st.Message, tc.wantMsg) {
					t.Fatalf("Validate: %v (%d), want %d %q...", err, st.Code, tc.wantCode, tc.wantMsg)
				}
			}
			if strings.HasPrefix(tc.name, "slow") && time.Since(start) > 2500*time.Millisecond {
				t.Errorf("the 1 s timeout took %v", time.Since(start))
			}
			if tc.wantWarns != nil && strings.Join(warns, ",") != strings.Join(tc.wantWarns, ",") {
				t.Errorf("warnings %q, want %q", warns, tc.wantWarns)
			}
		})
	}
}

func TestReviewRequest(t *testing.T) {
	ws := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) {})
	_, v := newPlugins(t, nil, []*registration.ValidatingWebhookConfiguration{validatingOf(ws, "look.example.com", nil)})
	a := attrs(admission.Update, nil)
	a.OldObject, a.VersionedOldObject = a.Object, a.Object
	a.DryRun = true
	if err := v.Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	req := ws.lastRequest()
	if req == nil {
		t.Fatal("no request")
	}
	if req.UID == "" || req.Kind != (GroupVersionKind{"example.com", "v1", "Widget"}) || req.Resource != (GroupVersionResource{"example.com", "v1", "widgets"}) ||
		*req.RequestKind != req.Kind || req.Operation != "UPDATE" || req.Namespace != "default" || req.Name != "w1" ||
		req.UserInfo.Username != "alice" || req.DryRun == nil || !*req.DryRun {
		t.Errorf("request %+v", req)
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object, &obj); err != nil || obj["kind"] != "Widget" || obj["apiVersion"] != "example.com/v1" {
		t.Errorf("object %s (%v): want apiVersion and kind", req.Object, err)
	}
	if len(req.OldObject) == 0 || !strings.Contains(string(req.Options), `"kind":"UpdateOptions"`) || !strings.Contains(string(req.Options), `"dryRun":["All"]`) {
		t.Errorf("oldObject %s options %s", req.OldObject, req.Options)
	}
}

// labelPatch answers with a JSON patch adding label key=value.
func labelPatch(key, value string) func(*AdmissionRequest, *AdmissionResponse) {
	return func(req *AdmissionRequest, resp *AdmissionResponse) {
		var obj widget
		_ = json.Unmarshal(req.Object, &obj)
		if obj.Labels[key] == value {
			return
		}
		op := `{"op":"add","path":"/metadata/labels","value":{"` + key + `":"` + value + `"}}`
		if obj.Labels != nil {
			op = `{"op":"add","path":"/metadata/labels/` + key + `","value":"` + value + `"}`
		}
		resp.Patch = []byte("[" + op + "]")
		resp.PatchType = ptr(PatchTypeJSONPatch)
	}
}

func TestMutatingWebhooks(t *testing.T) {
	t.Run("a patch is applied and the object decoded again", func(t *testing.T) {
		ws := newWebhookServer(t, labelPatch("team", "blue"))
		m, _ := newPlugins(t, []*registration.MutatingWebhookConfiguration{mutatingOf(ws, "label.example.com", nil)}, nil)
		a := attrs(admission.Create, nil)
		obj := a.Object.(*widget)
		if err := m.Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if obj.Labels["team"] != "blue" || obj.Spec.Size != 3 || a.Object != meta.Object(obj) {
			t.Errorf("patched object %+v", obj)
		}
	})
	t.Run("a patch from a validating webhook is refused", func(t *testing.T) {
		ws := newWebhookServer(t, labelPatch("team", "blue"))
		_, v := newPlugins(t, nil, []*registration.ValidatingWebhookConfiguration{validatingOf(ws, "label.example.com", nil)})
		err := v.Validate(context.Background(), attrs(admission.Create, nil))
		if want := "received invalid webhook response: validating webhook may not return response.patch"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	})
	t.Run("a patch that breaks the object is an internal error", func(t *testing.T) {
		ws := newWebhookServer(t, func(_ *AdmissionRequest, resp *AdmissionResponse) {
			resp.Patch, resp.PatchType = []byte(`[{"op":"replace","path":"/spec/size","value":"big"}]`), ptr(PatchTypeJSONPatch)
		})
		m, _ := newPlugins(t, []*registration.MutatingWebhookConfiguration{mutatingOf(ws, "break.example.com", func(h *registration.MutatingWebhook) {
			h.FailurePolicy = ptr(registration.Ignore) // a bad patch is not a failed call
		})}, nil)
		err := m.Admit(context.Background(), attrs(admission.Create, nil))
		if st := meta.StatusOf(err); err == nil || st.Code != 500 || !strings.Contains(st.Message, `decoding the object admission webhook "break.example.com" patched`) {
			t.Errorf("Admit: %v", err)
		}
	})
	t.Run("reinvocationPolicy IfNeeded", func(t *testing.T) {
		// first (IfNeeded) runs before second changes the object: it is
		// called again; never (Never) is not.
		first := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) {})
		never := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) {})
		second := newWebhookServer(t, labelPatch("second", "yes"))
		m, _ := newPlugins(t, []*registration.MutatingWebhookConfiguration{
			mutatingOf(first, "a.example.com", func(h *registration.MutatingWebhook) {
				h.ReinvocationPolicy = ptr(registration.IfNeededReinvocationPolicy)
			}),
			mutatingOf(never, "b.example.com", nil),
			mutatingOf(second, "c.example.com", nil),
		}, nil)
		a := attrs(admission.Create, nil)
		if err := m.Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if first.calls.Load() != 2 || never.calls.Load() != 1 || second.calls.Load() != 1 {
			t.Errorf("calls: IfNeeded %d, Never %d, the changer %d; want 2, 1, 1", first.calls.Load(), never.calls.Load(), second.calls.Load())
		}
		var obj widget
		_ = json.Unmarshal(first.lastRequest().Object, &obj)
		if obj.Labels["second"] != "yes" {
			t.Errorf("the reinvoked webhook saw %+v, not the change", obj.Labels)
		}
	})
}

func TestEquivalentMatchPolicy(t *testing.T) {
	ws := newWebhookServer(t, labelPatch("seen", "v2"))
	toV2 := func(o meta.Object) (meta.Object, error) {
		c := *o.(*widget)
		c.TypeMeta = meta.TypeMeta{APIVersion: "example.com/v2", Kind: "Widget"}
		c.Spec.Size *= 10 // another version, another unit
		return &c, nil
	}
	fromV2 := func(o meta.Object) (meta.Object, error) {
		c := *o.(*widget)
		c.TypeMeta = meta.TypeMeta{}
		c.Spec.Size /= 10
		return &c, nil
	}
	for _, policy := range []registration.MatchPolicyType{registration.Exact, registration.Equivalent} {
		t.Run(string(policy), func(t *testing.T) {
			m, _ := newPlugins(t, []*registration.MutatingWebhookConfiguration{mutatingOf(ws, "v2.example.com", func(h *registration.MutatingWebhook) {
				h.Rules[0].APIVersions = []string{"v2"}
				h.MatchPolicy = &policy
			})}, nil)
			a := attrs(admission.Create, nil)
			a.Equivalents = []admission.Equivalent{{Kind: meta.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"},
				Resource: meta.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}, ToVersion: toV2, ToStorage: fromV2}}
			before := ws.calls.Load()
			if err := m.Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			obj := a.Object.(*widget)
			if policy == registration.Exact {
				if ws.calls.Load() != before {
					t.Error("Exact called the webhook of another version")
				}
				return
			}
			req := ws.lastRequest()
			if req.Kind.Version != "v2" || req.RequestKind.Version != "v1" || !strings.Contains(string(req.Object), `"size":30`) {
				t.Errorf("request kind %v requestKind %v object %s", req.Kind, req.RequestKind, req.Object)
			}
			if obj.Labels["seen"] != "v2" || obj.Spec.Size != 3 {
				t.Errorf("object after the v2 patch: %+v", obj)
			}
		})
	}
}

// TestConnectionReuse: calls after the first reuse its connection: one
// TLS handshake for many calls.
func TestConnectionReuse(t *testing.T) {
	ws := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) {})
	_, v := newPlugins(t, nil, []*registration.ValidatingWebhookConfiguration{validatingOf(ws, "reuse.example.com", nil)})
	for range 20 {
		if err := v.Validate(context.Background(), attrs(admission.Create, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if ws.calls.Load() != 20 || ws.handshakes.Load() != 1 {
		t.Errorf("%d calls made %d TLS handshakes, want 20 and 1", ws.calls.Load(), ws.handshakes.Load())
	}
}

func TestNotSyncedRefuses(t *testing.T) {
	w, err := New(Config{Source: NewSource(), SyncTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Validating().Validate(context.Background(), attrs(admission.Create, nil))
	if !meta.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready to handle request") {
		t.Errorf("Validate before sync: %v", err)
	}
}

// BenchmarkValidatingWebhook measures a write through one validating
// webhook against the bare round trip of the same request with the same
// client, and reports the TLS handshakes per call (0 with reuse).
func BenchmarkValidatingWebhook(b *testing.B) {
	ws := newWebhookServer(b, func(*AdmissionRequest, *AdmissionResponse) {})
	cfg := validatingOf(ws, "bench.example.com", nil)
	_, v := newPlugins(b, nil, []*registration.ValidatingWebhookConfiguration{cfg})
	a := attrs(admission.Create, nil)
	b.Run("roundtrip", func(b *testing.B) {
		// The same review posted with a client of its own: the floor.
		c := &clients{}
		tg, err := c.targetFor(&cfg.Webhooks[0].ClientConfig, 10)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := json.Marshal(AdmissionReview{TypeMeta: meta.TypeMeta{APIVersion: ReviewGroupVersion, Kind: "AdmissionReview"},
			Request: &AdmissionRequest{UID: "u", Object: json.RawMessage(`{"metadata":{"name":"w1"}}`)}})
		for b.Loop() {
			var out AdmissionReview
			if err := iwebhook.Post(context.Background(), tg.http, iwebhook.Request{URL: tg.url, Body: body}, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	ws.handshakes.Store(0)
	b.Run("admission", func(b *testing.B) {
		for b.Loop() {
			if err := v.Validate(context.Background(), a); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(ws.handshakes.Load())/float64(b.N), "handshakes/op")
	})
}

func TestMatchConditions(t *testing.T) {
	ws := newWebhookServer(t, func(_ *AdmissionRequest, resp *AdmissionResponse) {
		resp.Allowed = false
		resp.Result = &meta.Status{Message: "no"}
	})
	mc, err := NewCELMatchConditions()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		conds   []registration.MatchCondition
		fp      registration.FailurePolicyType
		wantErr string
	}{
		{name: "all true: called", conds: []registration.MatchCondition{{Name: "big", Expression: "object.spec.size > 2"}, {Name: "user", Expression: "request.userInfo.username == 'alice'"}},
			wantErr: `admission webhook "mc.example.com" denied the request: no`},
		{name: "one false: not called", conds: []registration.MatchCondition{{Name: "big", Expression: "object.spec.size > 2"}, {Name: "small", Expression: "object.spec.size < 2"}}},
		{name: "false wins over an error", conds: []registration.MatchCondition{{Name: "err", Expression: "object.nothing == 1"}, {Name: "no", Expression: "false"}}},
		{name: "an error fails closed", conds: []registration.MatchCondition{{Name: "err", Expression: "object.nothing == 1"}}, fp: registration.Fail,
			wantErr: `Internal error occurred: failed calling webhook "mc.example.com": match condition "err": expression 'object.nothing == 1' resulted in error: no such key: nothing`},
		{name: "an error with Ignore", conds: []registration.MatchCondition{{Name: "err", Expression: "object.nothing == 1"}}, fp: registration.Ignore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := NewSource()
			src.SetMutating(nil)
			src.SetValidating([]*registration.ValidatingWebhookConfiguration{validatingOf(ws, "mc.example.com", func(h *registration.ValidatingWebhook) {
				h.MatchConditions = tc.conds
				if tc.fp != "" {
					h.FailurePolicy = &tc.fp
				}
			})})
			w, err := New(Config{Source: src, MatchConditions: mc})
			if err != nil {
				t.Fatal(err)
			}
			err = w.Validating().Validate(context.Background(), attrs(admission.Create, nil))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Errorf("Validate: %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestCredentialsFor(t *testing.T) {
	c := &Credentials{Users: map[string]certs.Kubeconfig{
		"hook.ns.svc:8443": {Token: "port"}, "hook.ns.svc": {Token: "host"}, "*.ns.svc": {Token: "wild"}, "*.svc": {Token: "svc"}, "*": {Token: "any"},
	}}
	for host, want := range map[string]string{
		"hook.ns.svc:8443": "port", "hook.ns.svc:443": "host", "hook.ns.svc": "host", "other.ns.svc:443": "wild",
		"a.b.svc:1": "svc", "127.0.0.1:9443": "any",
	} {
		if _, u, ok := c.For(host); !ok || u.Token != want {
			t.Errorf("For(%q) = %q, want %q", host, u.Token, want)
		}
	}
}

// TestCredentialsPresented: the token of the kubeconfig user named after
// the webhook's host is sent.
func TestCredentialsPresented(t *testing.T) {
	var got atomic.Value
	ws := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) {})
	inner := ws.Config.Handler
	ws.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		inner.ServeHTTP(w, r)
	})
	src := NewSource()
	src.SetMutating(nil)
	src.SetValidating([]*registration.ValidatingWebhookConfiguration{validatingOf(ws, "creds.example.com", nil)})
	host := strings.TrimPrefix(ws.URL, "https://")
	w, err := New(Config{Source: src, Credentials: &Credentials{Users: map[string]certs.Kubeconfig{host: {Token: "s3cret"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Validating().Validate(context.Background(), attrs(admission.Create, nil)); err != nil {
		t.Fatal(err)
	}
	if got.Load() != "Bearer s3cret" {
		t.Errorf("Authorization %q", got.Load())
	}
}

// TestDeleteReview: on DELETE a mutating webhook is sent the object as
// oldObject, no object, and the client's DeleteOptions; a patch it
// answers with is refused with kube-apiserver's 500, an empty answer
// lets the delete go on.
func TestDeleteReview(t *testing.T) {
	deleteAttrs := func() *admission.Attributes {
		a := attrs(admission.Delete, nil)
		a.OldObject, a.VersionedOldObject, a.Object, a.VersionedObject = a.Object, a.Object, nil, nil
		background := meta.DeletePropagationBackground
		a.Options = &meta.DeleteOptions{TypeMeta: meta.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}, PropagationPolicy: &background}
		return a
	}
	t.Run("the request", func(t *testing.T) {
		ws := newWebhookServer(t, func(*AdmissionRequest, *AdmissionResponse) {})
		m, _ := newPlugins(t, []*registration.MutatingWebhookConfiguration{mutatingOf(ws, "look.example.com", nil)}, nil)
		if err := m.Admit(context.Background(), deleteAttrs()); err != nil {
			t.Fatal(err)
		}
		req := ws.lastRequest()
		if req == nil || req.Operation != "DELETE" || len(req.Object) != 0 || !strings.Contains(string(req.OldObject), `"name":"w1"`) {
			t.Fatalf("request %+v", req)
		}
		var opts map[string]any
		if err := json.Unmarshal(req.Options, &opts); err != nil || opts["kind"] != "DeleteOptions" || opts["apiVersion"] != "meta.k8s.io/v1" || opts["propagationPolicy"] != "Background" {
			t.Errorf("options %s: %v", req.Options, err)
		}
	})
	t.Run("a patch is refused", func(t *testing.T) {
		ws := newWebhookServer(t, func(_ *AdmissionRequest, resp *AdmissionResponse) {
			resp.Patch = []byte(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`)
			resp.PatchType = ptr(PatchTypeJSONPatch)
		})
		m, _ := newPlugins(t, []*registration.MutatingWebhookConfiguration{mutatingOf(ws, "patcher.example.com", nil)}, nil)
		err := m.Admit(context.Background(), deleteAttrs())
		want := `Internal error occurred: admission webhook "patcher.example.com" attempted to modify the object, which is not supported for this operation`
		if err == nil || err.Error() != want || ws.calls.Load() != 1 {
			t.Errorf("Admit: %v after %d calls, want %s", err, ws.calls.Load(), want)
		}
	})
}
