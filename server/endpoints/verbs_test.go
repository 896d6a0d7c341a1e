package endpoints_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func TestCreateGetReplace(t *testing.T) {
	ts := newTestServer(t)
	created := ts.create(t, "w1", `{"size":3,"owner":"me","parts":[{"name":"p","count":2}]}`)
	if created["apiVersion"] != "test.example.com/v1" || created["kind"] != "Widget" {
		t.Errorf("create answered %v %v", created["apiVersion"], created["kind"])
	}
	for _, f := range []string{"metadata.uid", "metadata.resourceVersion", "metadata.creationTimestamp"} {
		if s, _ := path(created, f).(string); s == "" {
			t.Errorf("%s missing in %v", f, created)
		}
	}
	if path(created, "metadata.namespace") != "ns" || path(created, "metadata.generation") != 1.0 ||
		path(created, "metadata.creationTimestamp") != "2024-05-06T07:08:09Z" || path(created, "spec.owner") != "me" {
		t.Errorf("created %v", created)
	}
	if attrs := ts.admission.take(); len(attrs) != 2 || attrs[0].Operation != admission.Create || attrs[1].Name != "w1" ||
		attrs[1].Namespace != "ns" || attrs[1].User == nil || attrs[1].User.Name != "tester" ||
		attrs[1].Resource != (meta.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}) ||
		attrs[1].Kind != (meta.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"}) {
		t.Errorf("admission attributes %+v", attrs)
	}

	resp, b := ts.do(t, req{method: "GET", path: ns + "/w1"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("get: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	got := decode(t, b)
	if path(got, "metadata.uid") != path(created, "metadata.uid") || path(got, "spec.size") != 3.0 {
		t.Errorf("get %v", got)
	}

	// Replace with the resourceVersion read.
	body := strings.Replace(string(b), `"size":3`, `"size":4`, 1)
	resp, b = ts.do(t, req{method: "PUT", path: ns + "/w1", body: body})
	if resp.StatusCode != 200 {
		t.Fatalf("put: %d %s", resp.StatusCode, b)
	}
	put := decode(t, b)
	if path(put, "spec.size") != 4.0 || path(put, "metadata.generation") != 2.0 || path(put, "metadata.resourceVersion") == path(got, "metadata.resourceVersion") {
		t.Errorf("put answered %v", put)
	}
	if attrs := ts.admission.take(); len(attrs) != 2 || attrs[0].Operation != admission.Update || attrs[0].OldObject == nil || attrs[0].Name != "w1" {
		t.Errorf("update admission %+v", attrs)
	}
	// The same body again is now stale.
	resp, b = ts.do(t, req{method: "PUT", path: ns + "/w1", body: body})
	wantStatus(t, resp, b, 409, meta.StatusReasonConflict,
		`Operation cannot be fulfilled on widgets.test.example.com "w1": the object has been modified; please apply your changes to the latest version and try again`)
	// PUT does not create here.
	resp, b = ts.do(t, req{method: "PUT", path: ns + "/nope", body: `{"metadata":{"name":"nope","resourceVersion":"1"}}`})
	wantStatus(t, resp, b, 404, meta.StatusReasonNotFound, `widgets.test.example.com "nope" not found`)
}

func TestErrorBodies(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w1", "")
	resp, b := ts.do(t, req{method: "GET", path: ns + "/missing"})
	st := wantStatus(t, resp, b, 404, meta.StatusReasonNotFound, `widgets.test.example.com "missing" not found`)
	if want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"widgets.test.example.com \"missing\" not found","reason":"NotFound","details":{"name":"missing","group":"test.example.com","kind":"widgets"},"code":404}`; strings.TrimSpace(string(b)) != want {
		t.Errorf("body %s\nwant %s", b, want)
	}
	_ = st

	for _, tc := range []struct {
		name    string
		r       req
		code    int
		reason  meta.StatusReason
		message string
	}{
		{"already exists", req{method: "POST", path: ns, body: `{"metadata":{"name":"w1"}}`},
			409, meta.StatusReasonAlreadyExists, `widgets.test.example.com "w1" already exists`},
		{"apiVersion mismatch", req{method: "POST", path: ns, body: `{"apiVersion":"test.example.com/v2","kind":"Widget","metadata":{"name":"x"}}`},
			400, meta.StatusReasonBadRequest, `Widget in version "v2" cannot be handled as a Widget: ` + "the API version in the data (test.example.com/v2) does not match the expected API version (test.example.com/v1)"},
		{"kind mismatch", req{method: "POST", path: ns, body: `{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"x"}}`},
			400, meta.StatusReasonBadRequest, `Gadget in version "v1" cannot be handled as a Widget: ` + "the kind in the data (Gadget) does not match the expected kind (Widget)"},
		{"namespace mismatch", req{method: "POST", path: ns, body: `{"metadata":{"name":"x","namespace":"other"}}`},
			400, meta.StatusReasonBadRequest, "the namespace of the provided object does not match the namespace sent on the request"},
		{"empty body", req{method: "POST", path: ns, contentType: "application/json"},
			400, meta.StatusReasonBadRequest, "the request body is empty; an object is required"},
		{"not an object", req{method: "POST", path: ns, body: `[1,2]`},
			400, meta.StatusReasonBadRequest, "the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: the body is not a JSON object (5b312c325d)"},
		{"truncated JSON", req{method: "POST", path: ns, body: `{"apiVersion":"test.example.com/v1","kind":"Widget",`},
			400, meta.StatusReasonBadRequest, `the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"test.example.co ...)`},
		{"bad YAML", req{method: "POST", path: ns, contentType: "application/yaml", body: "metadata: [\n"},
			400, meta.StatusReasonBadRequest, "the object provided is unrecognized (must be of type Widget): yaml: line 1: did not find expected node content (6d657461646174613a205b0a)"},
		{"a field of the wrong type", req{method: "POST", path: ns, body: `{"metadata":{"name":"x"},"spec":{"size":"big"}}`},
			400, meta.StatusReasonBadRequest, `Widget in version "v1" cannot be handled as a Widget: field spec.size: cannot use string as int`},
		{"name mismatch on PUT", req{method: "PUT", path: ns + "/w1", body: `{"metadata":{"name":"w2","resourceVersion":"1"}}`},
			400, meta.StatusReasonBadRequest, "the name of the object (w2) does not match the name on the URL (w1)"},
		{"no name on PUT", req{method: "PUT", path: ns + "/w1", body: `{"metadata":{"resourceVersion":"1"}}`},
			400, meta.StatusReasonBadRequest, "the name of the object () does not match the name on the URL (w1)"},
		{"no resourceVersion on PUT", req{method: "PUT", path: ns + "/w1", body: `{"metadata":{"name":"w1"}}`},
			422, meta.StatusReasonInvalid, `widgets.test.example.com "w1" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`},
		{"invalid name", req{method: "POST", path: ns, body: `{"metadata":{"name":"UPPER"}}`},
			422, meta.StatusReasonInvalid, `Widget.test.example.com "UPPER" is invalid: metadata.name: Invalid value: "UPPER": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		// kube-apiserver's ValidateCreateOptions, ValidatePatchOptions
		// and ValidateDeleteOptions: 422 naming the options' kind.
		{"bad dryRun", req{method: "POST", path: ns + "?dryRun=Some", body: `{"metadata":{"name":"x"}}`},
			422, meta.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`},
		{"bad dryRun on PATCH", req{method: "PATCH", path: ns + "/w1?dryRun=Bogus", body: `{}`, contentType: "application/merge-patch+json"},
			422, meta.StatusReasonInvalid, `PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`},
		{"merge patch not JSON", req{method: "PATCH", path: ns + "/w1", body: `{"spec":`, contentType: "application/merge-patch+json"},
			400, meta.StatusReasonBadRequest, "invalid JSON patch"},
		{"JSON patch not a list", req{method: "PATCH", path: ns + "/w1", body: `{"op":"add"}`, contentType: "application/json-patch+json"},
			400, meta.StatusReasonBadRequest, "error decoding patch: json: cannot unmarshal object into Go value of type jsonpatch.Patch"},
		{"bad dryRun on DELETE", req{method: "DELETE", path: ns + "/w1?dryRun=Bogus"},
			422, meta.StatusReasonInvalid, `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`},
		{"orphanDependents and propagationPolicy", req{method: "DELETE", path: ns + "/w1?orphanDependents=false", body: `{"propagationPolicy":"Background"}`},
			422, meta.StatusReasonInvalid, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Background": orphanDependents and deletionPropagation cannot be both set`},
		{"unknown path", req{method: "GET", path: gv + "/sprockets"},
			404, meta.StatusReasonNotFound, "the server could not find the requested resource"},
		{"unknown group", req{method: "GET", path: "/apis/other.example.com/v1/things"},
			404, meta.StatusReasonNotFound, "the server could not find the requested resource"},
		{"method not allowed", req{method: "PUT", path: ns, body: `{}`},
			405, meta.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource (PUT " + ns + ")"},
		{"not acceptable", req{method: "GET", path: ns + "/w1", accept: "application/xml"},
			406, meta.StatusReasonNotAcceptable, "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
		{"unsupported body type", req{method: "POST", path: ns, body: `x`, contentType: "text/plain"},
			415, meta.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"},
		{"bad label selector", req{method: "GET", path: ns + "?labelSelector=a+in"},
			400, meta.StatusReasonBadRequest, "unable to parse requirement: found '' expected: '('"},
		{"bad limit", req{method: "GET", path: ns + "?limit=x"},
			400, meta.StatusReasonBadRequest, `invalid value "x" for query parameter limit: must be an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.do(t, tc.r)
			wantStatus(t, resp, b, tc.code, tc.reason, tc.message)
		})
	}
}

func TestList(t *testing.T) {
	ts := newTestServer(t)
	for i := range 3 {
		ts.create(t, fmt.Sprintf("w%d", i), fmt.Sprintf(`{"size":%d}`, i))
	}
	resp, b := ts.do(t, req{method: "GET", path: ns})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var list struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			ResourceVersion    string `json:"resourceVersion"`
			Continue           string `json:"continue"`
			RemainingItemCount *int64 `json:"remainingItemCount"`
		} `json:"metadata"`
		Items []Widget `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "WidgetList" || list.APIVersion != "test.example.com/v1" || list.Metadata.ResourceVersion == "" || len(list.Items) != 3 {
		t.Errorf("list %s", b)
	}
	// Items of a typed resource's list carry no kind and apiVersion, as
	// kube-apiserver serves them: the list's say what they are.
	for i, it := range list.Items {
		if it.Kind != "" || it.APIVersion != "" || it.Name != fmt.Sprintf("w%d", i) || it.Spec.Size != i {
			t.Errorf("item %d: %+v", i, it)
		}
	}

	resp, b = ts.do(t, req{method: "GET", path: ns + "?limit=2"})
	list.Items = nil
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode, err)
	}
	if len(list.Items) != 2 || list.Metadata.Continue == "" || list.Metadata.RemainingItemCount == nil || *list.Metadata.RemainingItemCount != 1 {
		t.Errorf("first page %s", b)
	}
	resp, b = ts.do(t, req{method: "GET", path: ns + "?limit=2&continue=" + list.Metadata.Continue})
	list.Items, list.Metadata.Continue, list.Metadata.RemainingItemCount = nil, "", nil
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode, err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "w2" || list.Metadata.Continue != "" {
		t.Errorf("second page %s", b)
	}
	if strings.Contains(string(b), `"continue"`) || strings.Contains(string(b), "remainingItemCount") {
		t.Errorf("last page names continue or remainingItemCount: %s", b)
	}

	// An empty list has "items":[] as Kubernetes writes it.
	resp, b = ts.do(t, req{method: "GET", path: gv + "/namespaces/empty/widgets"})
	if resp.StatusCode != 200 || !strings.HasSuffix(string(b), `,"items":[]}`) {
		t.Errorf("empty list %s", b)
	}
	// All namespaces.
	resp, b = ts.do(t, req{method: "GET", path: gv + "/widgets?fieldSelector=metadata.name%3Dw1"})
	if resp.StatusCode != 200 || strings.Count(string(b), `"namespace":"ns"`) != 1 || !strings.Contains(string(b), `"name":"w1"`) {
		t.Errorf("all namespaces with a field selector: %d %s", resp.StatusCode, b)
	}
	// Cluster-scoped.
	resp, b = ts.do(t, req{method: "POST", path: gv + "/gadgets", body: `{"metadata":{"name":"g"},"color":"red"}`})
	if resp.StatusCode != 201 || path(decode(t, b), "metadata.namespace") != nil {
		t.Errorf("cluster-scoped create %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "GET", path: gv + "/gadgets"})
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"kind":"GadgetList"`) {
		t.Errorf("cluster-scoped list %s", b)
	}
}

func TestYAML(t *testing.T) {
	ts := newTestServer(t)
	body := "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: y1\n  labels:\n    a: b\nspec:\n  size: 7\n"
	resp, b := ts.do(t, req{method: "POST", path: ns, body: body, contentType: "application/yaml", accept: "application/yaml"})
	if resp.StatusCode != 201 || resp.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var w Widget
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	if w.Name != "y1" || w.Spec.Size != 7 || w.Labels["a"] != "b" || w.Kind != "Widget" {
		t.Errorf("yaml answer %+v", w)
	}
	resp, b = ts.do(t, req{method: "GET", path: ns, accept: "application/yaml"})
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "apiVersion: test.example.com/v1\nitems:\n") {
		t.Errorf("yaml list %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "POST", path: ns, body: "metadata: [", contentType: "application/yaml"})
	if resp.StatusCode != 400 {
		t.Errorf("bad yaml: %d %s", resp.StatusCode, b)
	}
}

func TestDelete(t *testing.T) {
	ts := newTestServer(t)
	w := ts.create(t, "w1", "")
	uid := path(w, "metadata.uid").(string)
	ts.admission.take()

	// Preconditions in the body, as kubectl sends them.
	resp, b := ts.do(t, req{method: "DELETE", path: ns + "/w1", body: `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"other"}}`})
	wantStatus(t, resp, b, 409, meta.StatusReasonConflict,
		`Operation cannot be fulfilled on Widget.test.example.com "w1": the UID in the precondition (other) does not match the UID in record (`+uid+`). The object might have been deleted and then recreated`)
	// dryRun in the query.
	resp, b = ts.do(t, req{method: "DELETE", path: ns + "/w1?dryRun=All"})
	if resp.StatusCode != 200 {
		t.Fatalf("dry-run delete %d %s", resp.StatusCode, b)
	}
	if resp, _ := ts.do(t, req{method: "GET", path: ns + "/w1"}); resp.StatusCode != 200 {
		t.Fatal("dry-run delete deleted")
	}
	attrs := ts.admission.take()
	if len(attrs) == 0 || attrs[len(attrs)-1].Operation != admission.Delete || !attrs[len(attrs)-1].DryRun || attrs[len(attrs)-1].OldObject == nil {
		t.Errorf("delete admission %+v", attrs)
	}
	resp, b = ts.do(t, req{method: "DELETE", path: ns + "/w1?propagationPolicy=Sideways"})
	wantStatus(t, resp, b, 422, meta.StatusReasonInvalid,
		`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`)
	resp, b = ts.do(t, req{method: "DELETE", path: ns + "/w1", body: `{"preconditions":{"uid":"` + uid + `"},"propagationPolicy":"Background"}`})
	if resp.StatusCode != 200 {
		t.Fatalf("delete %d %s", resp.StatusCode, b)
	}
	if d := decode(t, b); d["kind"] != "Widget" || path(d, "metadata.name") != "w1" {
		t.Errorf("delete answered %s", b)
	}
	resp, b = ts.do(t, req{method: "DELETE", path: ns + "/w1"})
	wantStatus(t, resp, b, 404, meta.StatusReasonNotFound, `widgets.test.example.com "w1" not found`)
	resp, b = ts.do(t, req{method: "DELETE", path: ns + "/w1", body: `{"preconditions":`})
	if resp.StatusCode != 400 {
		t.Errorf("malformed DeleteOptions: %d %s", resp.StatusCode, b)
	}
}

func TestDeleteCollection(t *testing.T) {
	ts := newTestServer(t)
	for _, n := range []string{"a", "b", "c"} {
		ts.create(t, n, "")
	}
	resp, b := ts.do(t, req{method: "DELETE", path: ns + "?fieldSelector=metadata.name%21%3Db"})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	d := decode(t, b)
	items, _ := d["items"].([]any)
	if d["kind"] != "WidgetList" || len(items) != 2 || path(d, "metadata.resourceVersion") == nil {
		t.Errorf("deletecollection answered %s", b)
	}
	resp, b = ts.do(t, req{method: "GET", path: ns})
	if items := decode(t, b)["items"].([]any); len(items) != 1 || path(items[0].(map[string]any), "metadata.name") != "b" {
		t.Errorf("left %s", b)
	}
	// Admission sees each deleted object by name.
	ts.create(t, "d", "")
	ts.admission.take()
	ts.admission.refuse = "d"
	resp, b = ts.do(t, req{method: "DELETE", path: ns})
	wantStatus(t, resp, b, 403, meta.StatusReasonForbidden, `widgets.test.example.com "d" is forbidden: refused by test admission`)
	var named []string
	for _, a := range ts.admission.take() {
		if a.Operation != admission.Delete || a.OldObject == nil || a.Namespace != "ns" {
			t.Errorf("deletecollection admission %+v", a)
		}
		named = append(named, a.Name)
	}
	// Each twice: the mutating plugins, then the validating ones.
	if strings.Join(named, ",") != "b,b,d,d" {
		t.Errorf("admission named %v, want b and d, twice each", named)
	}
	// As in kube-apiserver, deletecollection is per namespace.
	resp, b = ts.do(t, req{method: "DELETE", path: gv + "/widgets"})
	wantStatus(t, resp, b, 405, meta.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource (DELETE "+gv+"/widgets)")
}

func TestAdmissionRefuses(t *testing.T) {
	ts := newTestServer(t)
	ts.admission.refuse = "nope"
	resp, b := ts.do(t, req{method: "POST", path: ns, body: `{"metadata":{"name":"nope"}}`})
	wantStatus(t, resp, b, 403, meta.StatusReasonForbidden, `widgets.test.example.com "nope" is forbidden: refused by test admission`)
	resp, b = ts.do(t, req{method: "POST", path: ns, body: `{"metadata":{"generateName":"gen-"}}`})
	if resp.StatusCode != 201 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	attrs := ts.admission.take()
	// Mutating admission runs before the name is generated; validating
	// admission sees it.
	if len(attrs) != 4 || attrs[2].Name != "" || !strings.HasPrefix(attrs[3].Name, "gen-") {
		t.Errorf("admission names %+v", attrs)
	}
	if resp, _ := ts.do(t, req{method: "GET", path: ns + "/nope"}); resp.StatusCode != 404 {
		t.Error("a refused object was stored")
	}
}

func TestStatusSubresource(t *testing.T) {
	ts := newTestServer(t)
	w := ts.create(t, "w1", `{"size":1}`)
	rv := path(w, "metadata.resourceVersion").(string)
	resp, b := ts.do(t, req{method: "PUT", path: ns + "/w1/status",
		body: `{"metadata":{"name":"w1","resourceVersion":"` + rv + `","labels":{"x":"y"}},"spec":{"size":99},"status":{"ready":true}}`})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	got := decode(t, b)
	if path(got, "status.ready") != true || path(got, "spec.size") != 1.0 || path(got, "metadata.labels") != nil {
		t.Errorf("status PUT answered %s", b)
	}
	if attrs := ts.admission.take(); len(attrs) < 3 || attrs[2].Subresource != "status" {
		t.Errorf("status admission %+v", attrs)
	}
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w1/status", body: `{"status":{"ready":false},"spec":{"size":5}}`, contentType: "application/merge-patch+json"})
	if resp.StatusCode != 200 || path(decode(t, b), "status.ready") != nil || path(decode(t, b), "spec.size") != 1.0 {
		t.Errorf("status PATCH %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "GET", path: ns + "/w1/status"})
	if resp.StatusCode != 200 || path(decode(t, b), "metadata.name") != "w1" {
		t.Errorf("status GET %d %s", resp.StatusCode, b)
	}
	// The main resource ignores status.
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w1", body: `{"status":{"ready":true},"spec":{"size":2}}`, contentType: "application/merge-patch+json"})
	if resp.StatusCode != 200 || path(decode(t, b), "status.ready") != nil || path(decode(t, b), "spec.size") != 2.0 {
		t.Errorf("main PATCH %d %s", resp.StatusCode, b)
	}
	// Cluster-scoped gadgets have no status subresource.
	resp, b = ts.do(t, req{method: "GET", path: gv + "/gadgets/g/status"})
	wantStatus(t, resp, b, 404, meta.StatusReasonNotFound, "the server could not find the requested resource")
}

func TestBodyTooLarge(t *testing.T) {
	ts := newTestServer(t)
	big := `{"metadata":{"name":"big"},"spec":{"owner":"` + strings.Repeat("x", 3<<20) + `"}}`
	resp, b := ts.do(t, req{method: "POST", path: ns, body: big})
	wantStatus(t, resp, b, 413, meta.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 3145728")
	// Exactly at the limit is still read, and then meets the storage's
	// object size limit, which is smaller (etcd's): 413 naming that one.
	atLimit := `{"metadata":{"name":"fits"},"spec":{"owner":"` + strings.Repeat("x", 3<<20-len(`{"metadata":{"name":"fits"},"spec":{"owner":""}}`)) + `"}}`
	if len(atLimit) != 3<<20 {
		t.Fatalf("body of %d bytes", len(atLimit))
	}
	resp, b = ts.do(t, req{method: "POST", path: ns, body: atLimit})
	wantStatus(t, resp, b, 413, meta.StatusReasonRequestEntityTooLarge, fmt.Sprintf("Request entity too large: limit is %d", storage.DefaultMaxObjectBytes))
	resp, b = ts.do(t, req{method: "POST", path: ns, body: `{"metadata":{"name":"fits"}}`})
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/fits", body: big, contentType: "application/merge-patch+json"})
	wantStatus(t, resp, b, 413, meta.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 3145728")

	// A chunked body announces no length: the limit applies as it is read.
	hr, err := http.NewRequest("POST", ts.URL+ns, io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err = ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ = io.ReadAll(resp.Body)
	wantStatus(t, resp, b, 413, meta.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 3145728")
}

// TestDeletePropagationPolicy: with a garbage collector the policy of a
// DELETE (body or query, one object or a collection) sets kube's
// finalizers; without one it is ignored and the object goes at once.
func TestDeletePropagationPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, query, body string
		gc                bool
		wantFinalizer     string // "" when the object must be gone
	}{
		{name: "orphan in the body", body: `{"propagationPolicy":"Orphan"}`, gc: true, wantFinalizer: "orphan"},
		{name: "foreground in the query", query: "?propagationPolicy=Foreground", gc: true, wantFinalizer: "foregroundDeletion"},
		{name: "orphanDependents", query: "?orphanDependents=true", gc: true, wantFinalizer: "orphan"},
		{name: "background", body: `{"propagationPolicy":"Background"}`, gc: true},
		{name: "orphan without a collector", body: `{"propagationPolicy":"Orphan"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(c *server.Config) { c.GarbageCollection = tc.gc })
			for _, collection := range []bool{false, true} {
				ts.create(t, "w1", "")
				p := ns + "/w1"
				if collection {
					p = ns
				}
				resp, b := ts.do(t, req{method: "DELETE", path: p + tc.query, body: tc.body})
				if resp.StatusCode != 200 {
					t.Fatalf("collection=%v: delete %d %s", collection, resp.StatusCode, b)
				}
				resp, b = ts.do(t, req{method: "GET", path: ns + "/w1"})
				if tc.wantFinalizer == "" {
					if resp.StatusCode != 404 {
						t.Fatalf("collection=%v: object still there: %d %s", collection, resp.StatusCode, b)
					}
					continue
				}
				d := decode(t, b)
				fins, _ := path(d, "metadata.finalizers").([]any)
				if resp.StatusCode != 200 || len(fins) != 1 || fins[0] != tc.wantFinalizer || path(d, "metadata.deletionTimestamp") == nil {
					t.Fatalf("collection=%v: after the delete %d %s, want finalizer %s", collection, resp.StatusCode, b, tc.wantFinalizer)
				}
				// Remove the finalizer: the object goes, and the next round starts clean.
				resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w1", body: `{"metadata":{"finalizers":null}}`, contentType: "application/merge-patch+json"})
				if resp.StatusCode != 200 {
					t.Fatalf("removing the finalizer: %d %s", resp.StatusCode, b)
				}
			}
		})
	}
}

// TestDeleteAdmission: a DELETE goes through the mutating plugins, then
// the validating ones, as kube-apiserver's AdmissionToValidateObjectDeleteFunc
// runs them, each seeing the object as the old object and the client's
// DeleteOptions (meta.k8s.io/v1).
func TestDeleteAdmission(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w1", "")
	ts.admission.take()
	resp, b := ts.do(t, req{method: "DELETE", path: ns + "/w1", body: `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background","gracePeriodSeconds":0}`})
	if resp.StatusCode != 200 {
		t.Fatalf("delete %d %s", resp.StatusCode, b)
	}
	attrs := ts.admission.take()
	if len(attrs) != 2 {
		t.Fatalf("%d admission calls, want the mutating and the validating one: %+v", len(attrs), attrs)
	}
	for i, a := range attrs {
		o, _ := a.Options.(*meta.DeleteOptions)
		if a.Operation != admission.Delete || a.Object != nil || a.OldObject == nil || a.OldObject.GetObjectMeta().Name != "w1" ||
			o == nil || o.APIVersion != "meta.k8s.io/v1" || o.Kind != "DeleteOptions" ||
			o.PropagationPolicy == nil || *o.PropagationPolicy != meta.DeletePropagationBackground ||
			o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 {
			t.Errorf("call %d: %+v options %+v", i, a, o)
		}
	}
}

// TestDeleteStatus: a kind with DeleteStatus (kube's configmaps, secrets,
// RBAC) answers a delete that removes the object, or would (dryRun), with
// kube-apiserver's Status Success naming it, and a delete that only marks
// it (finalizers) with the object.
func TestDeleteStatus(t *testing.T) {
	mem := memory.New(memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	widgets, err := registry.NewStore(registry.Options[*Widget]{
		Resource: meta.GroupResource{Group: group, Resource: "widgets"}, Kind: "Widget", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*Widget]{}, Storage: mem, DeleteStatus: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, hs := serveGroup(t, server.NewAPIGroupInfo(group).AddVersion("v1", registry.Serve(widgets)), []string{"testers"})
	ts := &testServer{Server: hs}
	uid := path(ts.create(t, "w1", ""), "metadata.uid").(string)
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"w1","group":"test.example.com","kind":"widgets","uid":"` + uid + `"}}`
	for _, q := range []string{"?dryRun=All", ""} {
		resp, b := ts.do(t, req{method: "DELETE", path: ns + "/w1" + q})
		if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != want {
			t.Errorf("DELETE %s: %d %s, want 200 %s", q, resp.StatusCode, b, want)
		}
	}
	resp, b := ts.do(t, req{method: "POST", path: ns, body: `{"metadata":{"name":"w2","finalizers":["example.com/hold"]}}`})
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "DELETE", path: ns + "/w2"})
	if d := decode(t, b); resp.StatusCode != 200 || d["kind"] != "Widget" || path(d, "metadata.deletionTimestamp") == nil {
		t.Errorf("DELETE of an object with finalizers: %d %s, want the object marked", resp.StatusCode, b)
	}
}
