package endpoints_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/apikit-dev/apikit/meta"
)

// FuzzWriteRequests sends arbitrary bodies, content types and queries to
// create, update and patch through the whole handler chain: every answer
// is a success or a 4xx Status whose code is the response's, never a 5xx,
// a panic or a body that is not JSON.
//
//	go test ./server/endpoints -run - -fuzz FuzzWriteRequests -fuzztime 30s
func FuzzWriteRequests(f *testing.F) {
	for _, s := range []struct{ verb, contentType, query, body string }{
		{"POST", "application/json", "", `{"metadata":{"name":"a"},"spec":{"size":1}}`},
		{"POST", "application/json", "fieldValidation=Strict", `{"metadata":{"name":"b","x":1},"spec":{"Size":1}}`},
		{"POST", "application/yaml", "", "metadata:\n  name: c\nspec:\n  size: 2\n"},
		{"POST", "application/yaml", "", "a: &x [*x, *x]\nb: &y [*x, *x]\n"},
		{"POST", "application/json", "dryRun=All", `{"metadata":{"generateName":"g-"}}`},
		{"POST", "text/plain", "", `hello`},
		{"PUT", "application/json", "", `{"metadata":{"name":"w","resourceVersion":"1"},"spec":{"size":3}}`},
		{"PUT", "application/json", "", `{"metadata":{"name":"w"},"status":{"phase":"x"}}`},
		{"PATCH", "application/merge-patch+json", "", `{"spec":{"size":4}}`},
		{"PATCH", "application/merge-patch+json", "", `{"metadata":{"name":null,"uid":"x"}}`},
		{"PATCH", "application/json-patch+json", "", `[{"op":"replace","path":"/spec/size","value":5}]`},
		{"PATCH", "application/json-patch+json", "", `[{"op":"add","path":"/metadata/labels/a~1b","value":"c"}]`},
		{"PATCH", "application/json-patch+json", "", `[{"op":"copy","from":"/spec","path":"/spec/x"}]`},
		{"PATCH", "application/strategic-merge-patch+json", "", `{}`},
		{"DELETE", "application/json", "gracePeriodSeconds=x", `{"propagationPolicy":"Orphan"}`},
	} {
		f.Add(s.verb, s.contentType, s.query, []byte(s.body))
	}
	ts := newTestServer(f)
	ts.create(f, "w", `{"size":1}`)
	f.Fuzz(func(t *testing.T, verb, contentType, query string, body []byte) {
		path := ns + "/w"
		switch verb {
		case "PUT", "PATCH", "DELETE":
		default:
			verb, path = "POST", ns
		}
		q, err := url.ParseQuery(query)
		if err != nil {
			q = nil
		}
		query = q.Encode()
		if !httpguts.ValidHeaderFieldValue(contentType) {
			contentType = "" // the client would not send it
		}
		if query != "" {
			path += "?" + query
		}
		resp, b := ts.do(t, req{method: verb, path: path, body: string(body), contentType: contentType})
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s (%s) %q: %d %s", verb, path, contentType, body, resp.StatusCode, b)
		}
		if !json.Valid(b) {
			t.Fatalf("%s %s: %d, not JSON: %q", verb, path, resp.StatusCode, b)
		}
		if resp.StatusCode >= 400 {
			var st meta.Status
			if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || int(st.Code) != resp.StatusCode || st.Message == "" {
				t.Fatalf("%s %s: %d with %s, want a Status of that code", verb, path, resp.StatusCode, b)
			}
		}
	})
}

// FuzzReadRequests sends arbitrary queries and Accept headers to GET and
// LIST (selectors, resourceVersion and its match, limit and continue,
// Table options): every answer is a success or a 4xx Status, as above.
// Watches are left out: they stream until their timeout.
//
//	go test ./server/endpoints -run - -fuzz FuzzReadRequests -fuzztime 30s
func FuzzReadRequests(f *testing.F) {
	for _, s := range []struct {
		item          bool
		query, accept string
	}{
		{false, "labelSelector=a%3Db,c!%3Dd,e+in+(f,g),!h", ""},
		{false, "fieldSelector=metadata.name%3Dw,metadata.namespace!%3Dx", ""},
		{false, "limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ3In0", ""},
		{false, "resourceVersion=0&resourceVersionMatch=NotOlderThan", ""},
		{false, "resourceVersion=999999&resourceVersionMatch=Exact", ""},
		{false, "includeObject=Object", "application/json;as=Table;v=v1;g=meta.k8s.io"},
		{false, "", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"},
		{true, "resourceVersion=1", "application/yaml"},
		{true, "", "application/json;as=Table;v=v1beta1;g=meta.k8s.io, */*;q=0.1"},
		{true, "", "application/vnd.kubernetes.protobuf"},
	} {
		f.Add(s.item, s.query, s.accept)
	}
	ts := newTestServer(f)
	ts.create(f, "w", `{"size":1}`)
	ts.create(f, "v", `{"size":2}`)
	f.Fuzz(func(t *testing.T, item bool, query, accept string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			q = url.Values{}
		}
		q.Del("watch")
		path := ns
		if item {
			path += "/w"
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		if !httpguts.ValidHeaderFieldValue(accept) {
			accept = ""
		}
		resp, b := ts.do(t, req{method: "GET", path: path, accept: accept})
		// A resourceVersion the store has not reached is a 504, as in
		// Kubernetes: the one 5xx a reader can cause.
		if resp.StatusCode >= 500 && !(resp.StatusCode == 504 && strings.Contains(string(b), `"reason":"ResourceVersionTooLarge"`)) {
			t.Fatalf("GET %s (Accept %q): %d %s", path, accept, resp.StatusCode, b)
		}
		if resp.StatusCode >= 400 {
			var st meta.Status
			if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || int(st.Code) != resp.StatusCode || st.Message == "" {
				t.Fatalf("GET %s: %d with %s, want a Status of that code", path, resp.StatusCode, b)
			}
		}
	})
}
