package extensions

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/internal/proccpu"
	iwebhook "github.com/apikit-dev/apikit/internal/webhook"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/testenv"
)

func webhookCRD(change func(c *CustomResourceConversion)) *CustomResourceDefinition {
	crd := validCRD()
	url := "https://127.0.0.1:8443/convert"
	crd.Spec.Conversion = &CustomResourceConversion{Strategy: WebhookConverter, Webhook: &WebhookConversion{
		ClientConfig: &WebhookClientConfig{URL: &url}, ConversionReviewVersions: []string{"v1"}}}
	change(crd.Spec.Conversion)
	return crd
}

func errorStrings(errs meta.FieldErrors) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// The messages and paths are kube-apiserver's (its internal type's paths,
// which its v1 API reports), but for the accepted review versions: apikit
// speaks v1 only.
func TestValidateConversion(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name   string
		change func(c *CustomResourceConversion)
		want   []string
	}{
		{"valid url", func(*CustomResourceConversion) {}, nil},
		{"valid service", func(c *CustomResourceConversion) {
			port := int32(8443)
			c.Webhook.ClientConfig = &WebhookClientConfig{Service: &ServiceReference{Namespace: "ns", Name: "svc", Path: str("/convert"), Port: &port}}
		}, nil},
		{"webhook strategy without webhook", func(c *CustomResourceConversion) { c.Webhook = nil }, []string{
			"spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
			"spec.conversion.conversionReviewVersions: Required value",
		}},
		{"url and service", func(c *CustomResourceConversion) {
			c.Webhook.ClientConfig.Service = &ServiceReference{Namespace: "ns", Name: "svc"}
		}, []string{"spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"}},
		{"http url", func(c *CustomResourceConversion) { c.Webhook.ClientConfig.URL = str("http://127.0.0.1/convert") }, []string{
			`spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
		}},
		{"service without name", func(c *CustomResourceConversion) {
			c.Webhook.ClientConfig = &WebhookClientConfig{Service: &ServiceReference{Namespace: "ns"}}
		}, []string{"spec.conversion.webhookClientConfig.service.name: Required value: service name is required"}},
		{"v1beta1 only", func(c *CustomResourceConversion) { c.Webhook.ConversionReviewVersions = []string{"v1beta1"} }, []string{
			`spec.conversion.conversionReviewVersions: Invalid value: ["v1beta1"]: must include at least one of v1`,
		}},
		{"duplicate version", func(c *CustomResourceConversion) { c.Webhook.ConversionReviewVersions = []string{"v1", "v1"} }, []string{
			`spec.conversion.conversionReviewVersions[1]: Invalid value: "v1": duplicate version`,
		}},
		{"bad caBundle", func(c *CustomResourceConversion) { c.Webhook.ClientConfig.CABundle = []byte("not a certificate") }, []string{
			"data does not contain any valid RSA or ECDSA certificates",
		}},
		{"None with a client config", func(c *CustomResourceConversion) {
			c.Strategy = NoneConverter
			c.Webhook.ConversionReviewVersions = nil
		}, []string{"spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"}},
		{"None with review versions", func(c *CustomResourceConversion) {
			c.Strategy = NoneConverter
			c.Webhook.ClientConfig = nil
		}, []string{"spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"}},
		{"None with an empty webhook", func(c *CustomResourceConversion) {
			c.Strategy = NoneConverter
			c.Webhook = &WebhookConversion{}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := webhookCRD(tc.change)
			crdStrategy{}.PrepareForCreate(t.Context(), crd)
			got := errorStrings(ValidateCustomResourceDefinition(crd))
			if len(got) != len(tc.want) {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i] != w && !(strings.HasPrefix(w, "data") && strings.HasSuffix(got[i], w)) {
					t.Errorf("error %q, want %q", got[i], w)
				}
			}
		})
	}
}

// An update may keep what kube-apiserver lets it keep: review versions
// naming no accepted one, and a caBundle that was already broken.
func TestValidateConversionUpdate(t *testing.T) {
	established := []CustomResourceDefinitionCondition{{Type: Established, Status: ConditionTrue}}
	old := webhookCRD(func(c *CustomResourceConversion) {
		c.Webhook.ConversionReviewVersions = []string{"v1beta1"}
		c.Webhook.ClientConfig.CABundle = []byte("broken")
	})
	old.Status.StoredVersions = []string{"v1"}
	old.Status.Conditions = established
	crd := webhookCRD(func(c *CustomResourceConversion) {
		c.Webhook.ConversionReviewVersions = []string{"v1beta1"}
		c.Webhook.ClientConfig.CABundle = []byte("still broken")
	})
	crd.Status = old.Status
	if errs := ValidateCustomResourceDefinitionUpdate(crd, old); len(errs) > 0 {
		t.Errorf("update keeping what was stored: %q", errorStrings(errs))
	}
	good := webhookCRD(func(*CustomResourceConversion) {})
	good.Status = old.Status
	if got := errorStrings(ValidateCustomResourceDefinitionUpdate(crd, good)); len(got) != 2 {
		t.Errorf("update breaking a valid conversion: %q, want the review versions' and the caBundle's errors", got)
	}
}

func widget(name, color string) *Object {
	return &Object{TypeMeta: meta.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name, ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Content:    map[string]any{"spec": map[string]any{"color": color}}}
}

// review answers a request with objects made by each.
func review(uid string, objs ...string) *ConversionReview {
	r := &ConversionReview{TypeMeta: meta.TypeMeta{APIVersion: ConversionReviewAPIVersion, Kind: "ConversionReview"},
		Response: &ConversionResponse{UID: uid, Result: meta.Status{Status: meta.StatusSuccess}}}
	for _, o := range objs {
		r.Response.ConvertedObjects = append(r.Response.ConvertedObjects, json.RawMessage(o))
	}
	return r
}

// The checks of a webhook's answer, with apiextensions-apiserver's
// messages (a list's items counted as it counts them).
func TestConvertedObjects(t *testing.T) {
	const in = "example.com/v1, Kind=Widget"
	ok := `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w1","namespace":"default","uid":"uid-w1"},"spec":{"colour":"red"}}`
	for _, tc := range []struct {
		name   string
		review *ConversionReview
		list   bool
		want   string
	}{
		{"converted", review("u", ok), false, ""},
		{"wrong kind of review", func() *ConversionReview {
			r := review("u", ok)
			r.APIVersion = "apiextensions.k8s.io/v1beta1"
			return r
		}(), false,
			"conversion webhook for example.com/v1, Kind=Widget failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"},
		{"no response", &ConversionReview{TypeMeta: meta.TypeMeta{APIVersion: ConversionReviewAPIVersion, Kind: "ConversionReview"}}, false,
			"conversion webhook for example.com/v1, Kind=Widget failed: no response provided"},
		{"other uid", review("x", ok), false, `conversion webhook for example.com/v1, Kind=Widget failed: expected response.uid="u", got "x"`},
		{"failure with message", func() *ConversionReview {
			r := review("u")
			r.Response.Result = meta.Status{Status: meta.StatusFailure, Message: "cannot convert"}
			return r
		}(), false, "conversion webhook for example.com/v1, Kind=Widget failed: cannot convert"},
		{"failure without message", func() *ConversionReview { r := review("u", ok); r.Response.Result = meta.Status{}; return r }(), false,
			"conversion webhook for example.com/v1, Kind=Widget failed: response.result.status was '', not 'Success'"},
		{"too many", review("u", ok, ok), false, "conversion webhook for example.com/v1, Kind=Widget returned 2 objects, expected 1"},
		{"wrong version", review("u", strings.Replace(ok, "example.com/v2", "example.com/v3", 1)), false,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v3)"},
		{"wrong version in a list", review("u", strings.Replace(ok, "example.com/v2", "example.com/v3", 1)), true,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid converted object at index 1: invalid groupVersion (expected example.com/v2, received example.com/v3)"},
		{"wrong kind", review("u", strings.Replace(ok, `"Widget"`, `"Gadget"`, 1)), false,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid object at index 0: invalid kind (expected Widget, received Gadget)"},
		{"renamed", review("u", strings.Replace(ok, `"w1"`, `"w2"`, 1)), false,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: w1 != w2"},
		{"moved", review("u", strings.Replace(ok, `"default"`, `"other"`, 1)), true,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid converted object at index 1: must have the same namespace: default != other"},
		{"other uid in metadata", review("u", strings.Replace(ok, `"uid-w1"`, `"uid-x"`, 1)), false,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same UID: uid-w1 != uid-x"},
		{"not an object in a list", review("u", `[1]`), true,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid converted object at index 0: a converted object must be a JSON object"},
		{"bad label", review("u", strings.Replace(ok, `"uid":"uid-w1"`, `"uid":"uid-w1","labels":{"a":"b c"}`, 1)), false,
			`conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: metadata.labels[a]: Invalid value: "b c": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{"label not a string", review("u", strings.Replace(ok, `"uid":"uid-w1"`, `"uid":"uid-w1","labels":{"a":1}`, 1)), true,
			"conversion webhook for example.com/v1, Kind=Widget returned invalid metadata in object at index 1: metadata.labels[a] must be a string, but is int64 in converted object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := convertedObjects(tc.review, "u", []*Object{widget("w1", "red")}, "example.com/v2", "Widget", in, tc.list)
			if tc.want != "" {
				if err == nil || err.Error() != tc.want {
					t.Fatalf("error %v\nwant  %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := out[0]
			if o.APIVersion != "example.com/v2" || o.ResourceVersion != "7" || o.Labels != nil || fmt.Sprint(o.Content) != "map[spec:map[colour:red]]" {
				t.Errorf("converted %+v", o)
			}
		})
	}
}

// Labels and annotations are the webhook's; the rest of the metadata is
// the original's whatever the webhook answered.
func TestConvertedObjectKeepsMetadata(t *testing.T) {
	answer := `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w1","namespace":"default","uid":"uid-w1","resourceVersion":"99","labels":{"c":"d"},"annotations":{"x":"y"}},"spec":{}}`
	out, err := convertedObjects(review("u", answer), "u", []*Object{widget("w1", "red")}, "example.com/v2", "Widget", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if o := out[0]; o.ResourceVersion != "7" || fmt.Sprint(o.Labels) != "map[c:d]" || fmt.Sprint(o.Annotations) != "map[x:y]" {
		t.Errorf("metadata %+v", o.ObjectMeta)
	}
}

// renameConverter answers ConversionReviews as a webhook converting
// between example.com/v1 (spec.color) and example.com/v2 (spec.colour)
// would, counting the reviews and objects.
type renameConverter struct {
	reviews, objects atomic.Int64
}

func (c *renameConverter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rev ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	c.reviews.Add(1)
	resp := &ConversionResponse{UID: rev.Request.UID, Result: meta.Status{Status: meta.StatusSuccess}}
	for _, raw := range rev.Request.Objects {
		var o map[string]any
		if err := json.Unmarshal(raw, &o); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.objects.Add(1)
		from, to := "color", "colour"
		if rev.Request.DesiredAPIVersion == "example.com/v1" {
			from, to = to, from
		}
		if spec, ok := o["spec"].(map[string]any); ok {
			if v, ok := spec[from]; ok {
				delete(spec, from)
				spec[to] = v
			}
		}
		o["apiVersion"] = rev.Request.DesiredAPIVersion
		b, _ := json.Marshal(o)
		resp.ConvertedObjects = append(resp.ConvertedObjects, b)
	}
	rev.Request, rev.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&rev)
}

// startWebhook serves h over TLS on 127.0.0.1 with a certificate of a
// fresh CA (naming hosts too), and returns its URL and the CA's PEM.
func startWebhook(t testing.TB, h http.Handler, hosts ...string) (string, []byte) {
	t.Helper()
	ca, err := certs.NewCA("conversion-test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.IssueServing(append([]string{"127.0.0.1"}, hosts...), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted client's handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/convert", ca.CertPEM
}

// A list's objects go to the webhook in one review, over one connection
// with the CA bundle verifying the webhook.
func TestWebhookConverterBatchesLists(t *testing.T) {
	h := &renameConverter{}
	url, ca := startWebhook(t, h)
	c := &webhookConverter{group: "example.com", kind: "Widget", listKind: "WidgetList",
		cc: WebhookClientConfig{URL: &url, CABundle: ca}, clients: &iwebhook.Clients{}, timeout: 10 * time.Second}
	var in []*Object
	for i := range 100 {
		in = append(in, widget(fmt.Sprintf("w%d", i), "red"))
	}
	out, err := c.convert(context.Background(), in, repeat("v1", len(in)), "v2", "v1", true)
	if err != nil {
		t.Fatal(err)
	}
	if h.reviews.Load() != 1 || h.objects.Load() != 100 || len(out) != 100 {
		t.Fatalf("%d reviews of %d objects gave %d, want 1 of 100", h.reviews.Load(), h.objects.Load(), len(out))
	}
	for i, o := range out {
		if o.Name != in[i].Name || o.APIVersion != "example.com/v2" || fmt.Sprint(o.Content["spec"]) != "map[colour:red]" {
			t.Fatalf("object %d: %+v", i, o)
		}
	}
	// Without the CA the webhook's certificate is not trusted.
	c.cc.CABundle = nil
	_, err = c.convert(context.Background(), in[:1], []string{"v1"}, "v2", "v1", false)
	if err == nil || !strings.HasPrefix(err.Error(), "conversion webhook for example.com/v1, Kind=Widget failed: Post \""+url+"?timeout=10s\": tls: ") {
		t.Errorf("untrusted webhook: %v", err)
	}
}

// A webhook behind a Service is reached through the resolver; without
// one, the conversion fails with the reason.
func TestWebhookConverterService(t *testing.T) {
	h := &renameConverter{}
	target, ca := startWebhook(t, h, "conv.ns.svc")
	path := "/convert"
	c := &webhookConverter{group: "example.com", kind: "Widget", listKind: "WidgetList",
		cc:      WebhookClientConfig{Service: &ServiceReference{Namespace: "ns", Name: "conv", Path: &path}, CABundle: ca},
		clients: &iwebhook.Clients{}, timeout: 10 * time.Second}
	_, err := c.convert(context.Background(), []*Object{widget("w1", "red")}, []string{"v1"}, "v2", "v1", false)
	if want := "conversion webhook for example.com/v1, Kind=Widget failed: no service resolver: this server cannot call webhooks behind a Service"; err == nil || err.Error() != want {
		t.Errorf("no resolver: %v", err)
	}
	c.resolver = resolverFunc(func(ns, name string, port int32) (*url.URL, error) {
		return nil, errors.New(`service "conv" not found`)
	})
	_, err = c.convert(context.Background(), []*Object{widget("w1", "red")}, []string{"v1"}, "v2", "v1", false)
	if want := `conversion webhook for example.com/v1, Kind=Widget failed: service "conv" not found`; err == nil || err.Error() != want {
		t.Errorf("no service: %v", err)
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var asked string
	c.resolver = resolverFunc(func(ns, name string, port int32) (*url.URL, error) {
		asked = fmt.Sprintf("%s/%s:%d", ns, name, port)
		return &url.URL{Scheme: "https", Host: u.Host}, nil
	})
	out, err := c.convert(context.Background(), []*Object{widget("w1", "red")}, []string{"v1"}, "v2", "v1", false)
	if err != nil || asked != "ns/conv:443" || h.reviews.Load() != 1 || fmt.Sprint(out[0].Content) != "map[spec:map[colour:red]]" {
		t.Errorf("through the resolver (%s): %v %v", asked, out, err)
	}
}

type resolverFunc func(namespace, name string, port int32) (*url.URL, error)

func (f resolverFunc) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return f(namespace, name, port)
}

// FuzzConversionResponse: no answer of a webhook makes the checks panic,
// and what they accept is one object per original, each the original's
// name, namespace and uid in the desired version.
func FuzzConversionResponse(f *testing.F) {
	ok := `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w1","namespace":"default","uid":"uid-w1","labels":{"c":"d"}},"spec":{"colour":"red"}}`
	for _, seed := range []string{
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","convertedObjects":[` + ok + `],"result":{"status":"Success"}}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","convertedObjects":[{"kind":"Widget","metadata":[]}],"result":{"status":"Success"}}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","convertedObjects":[1,null,"x"],"result":{"status":"Failure"}}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","convertedObjects":[{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w1","namespace":"default","uid":"uid-w1","annotations":{"a":7}}}],"result":{"status":"Success"}}}`,
		`{}`, `null`, `[]`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, list bool) {
		var rev ConversionReview
		if json.Unmarshal(data, &rev) != nil {
			return
		}
		orig := widget("w1", "red")
		out, err := convertedObjects(&rev, "u", []*Object{orig}, "example.com/v2", "Widget", "example.com/v1, Kind=Widget", list)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "conversion webhook for ") && !strings.Contains(string(data), "convertedObjects") {
				t.Fatalf("error without kube's prefix: %v", err)
			}
			return
		}
		if len(out) != 1 {
			t.Fatalf("%d objects for 1", len(out))
		}
		o := out[0]
		if o.Name != orig.Name || o.Namespace != orig.Namespace || o.UID != orig.UID || o.ResourceVersion != orig.ResourceVersion || o.APIVersion != "example.com/v2" {
			t.Fatalf("converted object lost its identity: %+v", o.ObjectMeta)
		}
		if _, err := o.MarshalJSON(); err != nil {
			t.Fatalf("accepted an object that does not encode: %v", err)
		}
	})
}

// twoVersionCRD is widgets.example.com with v1 (stored, spec.color) and
// v2 (spec.colour) converted by the webhook at url.
func twoVersionCRD(url string, ca []byte) string {
	schema := func(field string) string {
		return `{"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"` + field + `": {"type": "string", "maxLength": 10}}}}}}`
	}
	caJSON, _ := json.Marshal(ca)
	return `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "kind": "Widget"},
    "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "` + url + `", "caBundle": ` + string(caJSON) + `}}},
    "versions": [
      {"name": "v1", "served": true, "storage": true, "schema": ` + schema("color") + `},
      {"name": "v2", "served": true, "storage": false, "schema": ` + schema("colour") + `,
       "additionalPrinterColumns": [{"name": "Colour", "type": "string", "jsonPath": ".spec.colour"}]}]}}`
}

// serverClient is an administrator's client of a test server.
type serverClient struct {
	t    *testing.T
	host string
	c    *http.Client
}

func (c *serverClient) do(method, path, body string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.host+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	switch {
	case method == "PATCH":
		req.Header.Set("Content-Type", "application/merge-patch+json")
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func (c *serverClient) must(code int, method, path, body string) map[string]any {
	c.t.Helper()
	got, m := c.do(method, path, body)
	if got != code {
		c.t.Fatalf("%s %s: %d, want %d: %v", method, path, got, code, m)
	}
	return m
}

func specOf(m map[string]any) string { return fmt.Sprint(m["spec"]) }

const v1, v2 = "/apis/example.com/v1/namespaces/default/widgets", "/apis/example.com/v2/namespaces/default/widgets"

// startConverting starts an extensions server serving twoVersionCRD
// converted by the webhook at url, and waits until v2 is served.
func startConverting(t *testing.T, url string, ca []byte) *serverClient {
	t.Helper()
	env := testenv.Start(t, func(c *server.Config) (*server.GenericServer, error) {
		completed, err := c.Complete()
		if err != nil {
			return nil, err
		}
		ext, err := New(completed, nil, Config{ConversionTimeout: 20 * time.Second})
		if err != nil {
			return nil, err
		}
		return ext.GenericServer, nil
	})
	hc, err := env.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	hc.Timeout = 60 * time.Second
	c := &serverClient{t: t, host: env.Host, c: hc}
	c.must(201, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", twoVersionCRD(url, ca))
	c.poll("v2 served", func() string {
		if code, m := c.do("GET", v2, ""); code != 200 {
			return fmt.Sprint(code, m)
		}
		return ""
	})
	return c
}

// poll calls f until it returns "" or 30 s pass.
func (c *serverClient) poll(what string, f func() string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Objects cross versions through the webhook: written in v2 and stored
// in v1, read in either, a LIST in one review, a watch, a Table of v2's
// columns; a write invalid in v2 is refused in v2's terms, and a webhook
// that is down gives kube-apiserver's errors.
func TestConversionWebhookServed(t *testing.T) {
	h := &renameConverter{}
	var down atomic.Bool
	url, ca := startWebhook(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	c := startConverting(t, url, ca)

	w := c.must(201, "POST", v2, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w1"},"spec":{"colour":"red","extra":1}}`)
	if w["apiVersion"] != "example.com/v2" || specOf(w) != "map[colour:red]" {
		t.Errorf("created in v2: %v", w)
	}
	if got := c.must(200, "GET", v1+"/w1", ""); specOf(got) != "map[color:red]" || got["apiVersion"] != "example.com/v1" {
		t.Errorf("stored as v1: %v", got)
	}
	c.must(201, "POST", v1, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"color":"blue"}}`)
	if got := c.must(200, "GET", v2+"/w2", ""); specOf(got) != "map[colour:blue]" {
		t.Errorf("v1 object read in v2: %v", got)
	}
	before := h.reviews.Load()
	l := c.must(200, "GET", v2, "")
	if n := h.reviews.Load() - before; n != 1 {
		t.Errorf("a LIST of 2 took %d reviews, want 1", n)
	}
	items, _ := l["items"].([]any)
	if len(items) != 2 || specOf(items[0].(map[string]any)) != "map[colour:red]" || specOf(items[1].(map[string]any)) != "map[colour:blue]" {
		t.Errorf("list in v2: %v", items)
	}
	// Validation in the request's version, with its paths.
	code, st := c.do("POST", v2, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w3"},"spec":{"colour":"far too long a colour"}}`)
	if code != 422 || !strings.Contains(fmt.Sprint(st["message"]), "spec.colour: Too long") {
		t.Errorf("invalid v2 write: %d %v", code, st["message"])
	}
	// An update in v2: the current object is converted, then the result.
	if got := c.must(200, "PATCH", v2+"/w2", `{"spec":{"colour":"green"}}`); specOf(got) != "map[colour:green]" {
		t.Errorf("patched in v2: %v", got)
	}
	if got := c.must(200, "GET", v1+"/w2", ""); specOf(got) != "map[color:green]" {
		t.Errorf("patch stored: %v", got)
	}

	// Server-side apply in v2.
	req, _ := http.NewRequest("PATCH", c.host+v2+"/w3?fieldManager=test", strings.NewReader(`{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w3"},"spec":{"colour":"teal"}}`))
	req.Header.Set("Content-Type", "application/apply-patch+yaml")
	resp0, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b0, _ := io.ReadAll(resp0.Body)
	resp0.Body.Close()
	if resp0.StatusCode != 201 || !strings.Contains(string(b0), `"colour":"teal"`) {
		t.Errorf("server-side apply in v2: %d %s", resp0.StatusCode, b0)
	}
	if got := c.must(200, "GET", v1+"/w3", ""); specOf(got) != "map[color:teal]" {
		t.Errorf("applied in v2, stored: %v", got)
	}
	c.must(200, "DELETE", v2+"/w3", "")

	// A watch in v2.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wreq, _ := http.NewRequestWithContext(ctx, "GET", c.host+v2+"?watch=1&resourceVersion=0", nil)
	resp, err := c.c.Do(wreq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	seen := map[string]string{}
	for len(seen) < 2 {
		var ev struct {
			Type   string
			Object map[string]any
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch: %v (seen %v)", err, seen)
		}
		seen[fmt.Sprint(ev.Object["metadata"].(map[string]any)["name"])] = ev.Type + " " + fmt.Sprint(ev.Object["apiVersion"]) + " " + specOf(ev.Object)
	}
	if seen["w1"] != "ADDED example.com/v2 map[colour:red]" || seen["w2"] != "ADDED example.com/v2 map[colour:green]" {
		t.Errorf("watch events %v", seen)
	}

	// The webhook down: reads fail as kube's storage decode errors do,
	// writes as internal errors.
	down.Store(true)
	code, st = c.do("GET", v2+"/w1", "")
	if msg := fmt.Sprint(st["message"]); code != 500 || st["reason"] != nil || !strings.HasPrefix(msg, "conversion webhook for example.com/v1, Kind=Widget failed: ") {
		t.Errorf("GET with the webhook down: %d %v", code, st)
	}
	code, st = c.do("GET", v2, "")
	if msg := fmt.Sprint(st["message"]); code != 500 || !strings.HasPrefix(msg, "conversion webhook for example.com/v1, Kind=WidgetList failed: ") {
		t.Errorf("LIST with the webhook down: %d %v", code, st)
	}
	code, st = c.do("POST", v2, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w4"},"spec":{"colour":"red"}}`)
	if msg := fmt.Sprint(st["message"]); code != 500 || st["reason"] != "InternalError" || !strings.HasPrefix(msg, "Internal error occurred: conversion webhook for example.com/v2, Kind=Widget failed: ") {
		t.Errorf("POST with the webhook down: %d %v", code, st)
	}
	// The storage version needs no webhook.
	c.must(200, "GET", v1+"/w1", "")
}

// BenchmarkConvertedList measures a LIST of 1,000 custom resources in a
// version the webhook converts (one review of 1,000 objects, over a
// reused TLS connection to a webhook in the same process) beside the
// same LIST of a CRD with conversion None. cpu-ms/op is the process's CPU
// time per LIST (server, client and the test's webhook), steadier than
// ns/op on a loaded machine.
//
//	go test -run XXX -bench BenchmarkConvertedList ./server/extensions
func BenchmarkConvertedList(b *testing.B) {
	h := &renameConverter{}
	url, ca := startWebhook(b, h)
	env := testenv.Start(b, func(c *server.Config) (*server.GenericServer, error) {
		completed, err := c.Complete()
		if err != nil {
			return nil, err
		}
		ext, err := New(completed, nil, Config{})
		if err != nil {
			return nil, err
		}
		return ext.GenericServer, nil
	})
	hc, err := env.HTTPClient()
	if err != nil {
		b.Fatal(err)
	}
	hc.Timeout = 60 * time.Second
	do := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, env.Host+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	none := strings.NewReplacer("widgets", "gadgets", `"Widget"`, `"Gadget"`, `"strategy": "Webhook"`, `"strategy": "None"`).Replace(twoVersionCRD(url, ca))
	none = none[:strings.Index(none, `, "webhook"`)] + none[strings.Index(none, `}}},`)+2:]
	for _, crd := range []string{twoVersionCRD(url, ca), none} {
		if code, out := do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd); code != 201 {
			b.Fatalf("CRD: %d %s", code, out)
		}
	}
	for _, plural := range []string{"widgets", "gadgets"} {
		path := "/apis/example.com/v1/namespaces/default/" + plural
		deadline := time.Now().Add(30 * time.Second)
		for {
			if code, _ := do("GET", path, ""); code == 200 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s not served", plural)
			}
			time.Sleep(50 * time.Millisecond)
		}
		kind := "Widget"
		if plural == "gadgets" {
			kind = "Gadget"
		}
		for i := range 1000 {
			body := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":%q,"metadata":{"name":"o%d"},"spec":{"color":"red"}}`, kind, i)
			if code, out := do("POST", path, body); code != 201 {
				b.Fatalf("create: %d %s", code, out)
			}
		}
	}
	for _, bc := range []struct{ name, plural string }{{"None", "gadgets"}, {"Webhook", "widgets"}} {
		b.Run(bc.name, func(b *testing.B) {
			path := "/apis/example.com/v2/namespaces/default/" + bc.plural
			start := proccpu.Used()
			for b.Loop() {
				if code, out := do("GET", path, ""); code != 200 || !bytes.Contains(out, []byte(`"o999"`)) {
					b.Fatalf("list: %d %.200s", code, out)
				}
			}
			// The server's, the client's and the webhook's CPU: one process.
			b.ReportMetric(float64(proccpu.Used()-start)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// repeat returns n copies of v.
func repeat(v string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Objects stored in an earlier storage version are converted from it, as
// kube-apiserver converts them: after v2 becomes the storage version, an
// object stored in v1 is read in v1 without a call and in v2 through the
// webhook, and a LIST of objects of both versions converts only those of
// the other.
func TestConversionFromEarlierStorageVersion(t *testing.T) {
	h := &renameConverter{}
	url, ca := startWebhook(t, h)
	c := startConverting(t, url, ca)
	c.must(201, "POST", v1, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"red"}}`)
	const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
	crd := c.must(200, "GET", crdPath, "")
	versions := crd["spec"].(map[string]any)["versions"].([]any)
	versions[0].(map[string]any)["storage"] = false
	versions[1].(map[string]any)["storage"] = true
	b, _ := json.Marshal(crd)
	crd = c.must(200, "PUT", crdPath, string(b))
	if got := fmt.Sprint(crd["status"].(map[string]any)["storedVersions"]); got != "[v1 v2]" {
		t.Fatalf("storedVersions %s", got)
	}
	c.poll("w1, stored in v1, read in v2", func() string {
		if got := c.must(200, "GET", v2+"/w1", ""); specOf(got) != "map[colour:red]" {
			return specOf(got)
		}
		return ""
	})
	// The server takes the new storage version from the CRD's watch, a
	// moment after the PUT answers (as kube-apiserver's CRD handler): until
	// then a create in v2 is converted to v1 to be stored. Wait until one
	// is stored as it came, with a probe deleted again.
	probes := 0
	c.poll("objects stored in v2", func() string {
		probes++
		name := fmt.Sprintf("probe%d", probes)
		before := h.reviews.Load()
		c.must(201, "POST", v2, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"`+name+`"},"spec":{"colour":"none"}}`)
		converted := h.reviews.Load() != before
		c.must(200, "DELETE", v2+"/"+name, "")
		if converted {
			return "a create in v2 was converted to be stored"
		}
		return ""
	})
	before := h.reviews.Load()
	if got := c.must(200, "GET", v1+"/w1", ""); specOf(got) != "map[color:red]" || h.reviews.Load() != before {
		t.Errorf("w1 read in v1, the version it is stored in: %v, %d reviews", specOf(got), h.reviews.Load()-before)
	}
	c.must(201, "POST", v2, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w2"},"spec":{"colour":"blue"}}`)
	for _, tc := range []struct{ path, want string }{
		{v1, "map[color:red] map[color:blue]"},
		{v2, "map[colour:red] map[colour:blue]"},
	} {
		before := h.reviews.Load()
		before0 := h.objects.Load()
		l := c.must(200, "GET", tc.path, "")
		var got []string
		for _, it := range l["items"].([]any) {
			got = append(got, specOf(it.(map[string]any)))
		}
		if strings.Join(got, " ") != tc.want || h.reviews.Load()-before != 1 || h.objects.Load()-before0 != 1 {
			t.Errorf("LIST %s: %v with %d reviews of %d objects, want %s with 1 of 1", tc.path, got, h.reviews.Load()-before, h.objects.Load()-before0, tc.want)
		}
	}
	// A write stores w1 in v2.
	c.must(200, "PATCH", v1+"/w1", `{"spec":{"color":"green"}}`)
	before = h.reviews.Load()
	if got := c.must(200, "GET", v2+"/w1", ""); specOf(got) != "map[colour:green]" || h.reviews.Load() != before {
		t.Errorf("w1 rewritten, read in v2: %v, %d reviews", specOf(got), h.reviews.Load()-before)
	}
}
