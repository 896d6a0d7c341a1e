package endpoints_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

const (
	tableV1     = "application/json;as=Table;v=v1;g=meta.k8s.io"
	kubectlGet  = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	partialV1   = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	partialList = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
)

func TestTable(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "a", `{"size":1}`)
	ts.create(t, "b", `{"size":2}`)

	resp, b := ts.do(t, req{method: "GET", path: ns, accept: kubectlGet})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var tbl meta.Table
	if err := json.Unmarshal(b, &tbl); err != nil {
		t.Fatal(err)
	}
	if tbl.Kind != "Table" || tbl.APIVersion != "meta.k8s.io/v1" || tbl.ResourceVersion == "" {
		t.Errorf("table head %s", b)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if !slices.Equal(cols, []string{"Name", "Size", "Age"}) || len(tbl.Rows) != 2 {
		t.Fatalf("columns %v rows %d", cols, len(tbl.Rows))
	}
	if c := tbl.Rows[1].Cells; len(c) != 3 || c[0] != "b" || c[1] != 2.0 {
		t.Errorf("row cells %v", c)
	}
	var obj map[string]any
	if err := json.Unmarshal(tbl.Rows[0].Object, &obj); err != nil {
		t.Fatal(err)
	}
	if obj["kind"] != "PartialObjectMetadata" || obj["apiVersion"] != "meta.k8s.io/v1" || path(obj, "metadata.name") != "a" {
		t.Errorf("default row object %v", obj)
	}

	for _, tc := range []struct {
		include string
		check   func(raw json.RawMessage) bool
	}{
		{"None", func(raw json.RawMessage) bool { return string(raw) == "null" }},
		{"Metadata", func(raw json.RawMessage) bool { return strings.Contains(string(raw), `"kind":"PartialObjectMetadata"`) }},
		{"Object", func(raw json.RawMessage) bool {
			return strings.Contains(string(raw), `"kind":"Widget"`) && strings.Contains(string(raw), `"spec":{"size":1}`)
		}},
	} {
		resp, b := ts.do(t, req{method: "GET", path: ns + "?includeObject=" + tc.include, accept: tableV1})
		var raw struct {
			Rows []struct {
				Object json.RawMessage `json:"object"`
			} `json:"rows"`
		}
		if err := json.Unmarshal(b, &raw); err != nil || resp.StatusCode != 200 || len(raw.Rows) != 2 || !tc.check(raw.Rows[0].Object) {
			t.Errorf("includeObject=%s: %d %s", tc.include, resp.StatusCode, b)
		}
	}
	resp, b = ts.do(t, req{method: "GET", path: ns + "?includeObject=Bogus", accept: tableV1})
	wantStatus(t, resp, b, 400, meta.StatusReasonBadRequest,
		`Unable to convert to Table as requested: includeObject: Unsupported value: "Bogus": supported values: "Metadata", "None", "Object"`)

	// One object as a table.
	resp, b = ts.do(t, req{method: "GET", path: ns + "/a", accept: kubectlGet})
	tbl = meta.Table{}
	if err := json.Unmarshal(b, &tbl); err != nil || resp.StatusCode != 200 || tbl.Kind != "Table" || len(tbl.Rows) != 1 || tbl.Rows[0].Cells[0] != "a" {
		t.Errorf("object as a table: %d %s", resp.StatusCode, b)
	}
	// With the object's resourceVersion, as kube-apiserver's.
	_, plain := ts.do(t, req{method: "GET", path: ns + "/a"})
	if rv, _ := path(decode(t, plain), "metadata.resourceVersion").(string); rv == "" || tbl.ResourceVersion != rv {
		t.Errorf("object as a table: resourceVersion %q, the object's %q", tbl.ResourceVersion, rv)
	}
	// A write never answers with a table.
	resp, b = ts.do(t, req{method: "POST", path: ns, body: `{"metadata":{"name":"c"}}`, accept: kubectlGet})
	if resp.StatusCode != 201 || decode(t, b)["kind"] != "Widget" {
		t.Errorf("create with a table Accept: %d %s", resp.StatusCode, b)
	}
}

func TestPartialObjectMetadata(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "a", `{"size":1}`)
	resp, b := ts.do(t, req{method: "GET", path: ns + "/a", accept: partialV1})
	got := decode(t, b)
	if resp.StatusCode != 200 || got["kind"] != "PartialObjectMetadata" || got["apiVersion"] != "meta.k8s.io/v1" ||
		path(got, "metadata.name") != "a" || got["spec"] != nil {
		t.Errorf("get as metadata: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "GET", path: ns, accept: partialList})
	got = decode(t, b)
	items, _ := got["items"].([]any)
	if resp.StatusCode != 200 || got["kind"] != "PartialObjectMetadataList" || got["apiVersion"] != "meta.k8s.io/v1" ||
		path(got, "metadata.resourceVersion") == nil || len(items) != 1 || items[0].(map[string]any)["kind"] != "PartialObjectMetadata" {
		t.Errorf("list as metadata: %d %s", resp.StatusCode, b)
	}
}

func TestPatch(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w", `{"size":1,"owner":"me","tags":["a","b"]}`)
	for _, tc := range []struct {
		name, contentType, body string
		code                    int
		check                   func(m map[string]any) bool
	}{
		{"json patch", "application/json-patch+json", `[{"op":"replace","path":"/spec/size","value":9},{"op":"add","path":"/spec/tags/-","value":"c"}]`, 200,
			func(m map[string]any) bool {
				return path(m, "spec.size") == 9.0 && len(path(m, "spec.tags").([]any)) == 3
			}},
		{"merge patch", "application/merge-patch+json", `{"metadata":{"labels":{"x":"y"}},"spec":{"owner":null}}`, 200,
			func(m map[string]any) bool {
				return path(m, "metadata.labels.x") == "y" && path(m, "spec.owner") == nil && path(m, "spec.size") == 9.0
			}},
		{"merge patch with charset", "application/merge-patch+json; charset=utf-8", `{"spec":{"size":10}}`, 200,
			func(m map[string]any) bool { return path(m, "spec.size") == 10.0 }},
		{"failed json patch test", "application/json-patch+json", `[{"op":"test","path":"/spec/size","value":1}]`, 422, nil},
		{"json patch of a missing path", "application/json-patch+json", `[{"op":"replace","path":"/spec/nothing/here","value":1}]`, 422, nil},
		{"malformed json patch", "application/json-patch+json", `{"op":"replace"}`, 400, nil},
		{"malformed merge patch", "application/merge-patch+json", `{"spec":`, 400, nil},
		{"patch that renames", "application/merge-patch+json", `{"metadata":{"name":"other"}}`, 400, nil},
		{"patch with a stale resourceVersion", "application/merge-patch+json", `{"metadata":{"resourceVersion":"1"}}`, 409, nil},
		{"patch to an invalid object", "application/merge-patch+json", `{"metadata":{"labels":{"bad key!":"x"}}}`, 422, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.do(t, req{method: "PATCH", path: ns + "/w", body: tc.body, contentType: tc.contentType})
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if tc.check != nil && !tc.check(decode(t, b)) {
				t.Errorf("answer %s", b)
			}
			if tc.code >= 400 {
				var st meta.Status
				if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || int(st.Code) != tc.code {
					t.Errorf("error body %s", b)
				}
			}
		})
	}

	resp, b := ts.do(t, req{method: "PATCH", path: ns + "/missing", body: `{}`, contentType: "application/merge-patch+json"})
	wantStatus(t, resp, b, 404, meta.StatusReasonNotFound, `widgets.test.example.com "missing" not found`)

	// Strategic merge patch, with the Go type's merge keys: tags merge
	// as a set, parts by name; what kubectl patch sends by default.
	if resp, b := ts.do(t, req{method: "PATCH", path: ns + "/w", contentType: "application/merge-patch+json",
		body: `{"spec":{"parts":[{"name":"p1"},{"name":"p2"}],"tags":["a","b","c"]}}`}); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w", contentType: "application/strategic-merge-patch+json",
		body: `{"spec":{"tags":["c","d"],"parts":[{"name":"p1","count":7},{"name":"p9"}],"$setElementOrder/tags":["a","b","c","d"]}}`})
	if got := decode(t, b); resp.StatusCode != 200 || fmt.Sprint(path(got, "spec.tags")) != "[a b c d]" ||
		fmt.Sprint(path(got, "spec.parts")) != "[map[count:7 name:p1] map[name:p2] map[name:p9]]" {
		t.Errorf("strategic merge patch: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w", contentType: "application/strategic-merge-patch+json",
		body: `{"spec":{"$deleteFromPrimitiveList/tags":["a"],"parts":[{"name":"p2","$patch":"delete"}]}}`})
	if got := decode(t, b); resp.StatusCode != 200 || fmt.Sprint(path(got, "spec.tags")) != "[b c d]" ||
		fmt.Sprint(path(got, "spec.parts")) != "[map[count:7 name:p1] map[name:p9]]" {
		t.Errorf("strategic merge patch directives: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w", contentType: "application/strategic-merge-patch+json", body: `{"spec":{"$patch":"sideways"}}`})
	wantStatus(t, resp, b, http.StatusBadRequest, meta.StatusReasonBadRequest, `unknown patch type sideways in "$patch"`)
	// A body that is no patch type is refused; apply is apply_test's.
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w", body: `{"spec":{"size":2}}`, contentType: "application/json"})
	wantStatus(t, resp, b, http.StatusUnsupportedMediaType, meta.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml")

	// A dry-run patch answers the result and keeps the object.
	resp, b = ts.do(t, req{method: "PATCH", path: ns + "/w?dryRun=All", body: `{"spec":{"size":50}}`, contentType: "application/merge-patch+json"})
	if resp.StatusCode != 200 || path(decode(t, b), "spec.size") != 50.0 {
		t.Errorf("dry-run patch %d %s", resp.StatusCode, b)
	}
	_, b = ts.do(t, req{method: "GET", path: ns + "/w"})
	if path(decode(t, b), "spec.size") != 10.0 {
		t.Errorf("dry-run patch persisted: %s", b)
	}
}
