package endpoints_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/examples/wardle/wardleapi"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

const applyType = "application/apply-patch+yaml"

// managers reads an object's managedFields as "manager/operation/subresource" -> fields JSON.
func managers(t testing.TB, obj map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, _ := path(obj, "metadata.managedFields").([]any)
	for _, e := range entries {
		m := e.(map[string]any)
		// An apply that changed nothing records no time, as in Kubernetes.
		if m["fieldsType"] != "FieldsV1" || (m["time"] == nil && m["operation"] != "Apply") || m["apiVersion"] != "test.example.com/v1" {
			t.Errorf("entry %v lacks fieldsType, time or apiVersion", m)
		}
		fields, _ := json.Marshal(m["fieldsV1"])
		sub, _ := m["subresource"].(string)
		out[fmt.Sprintf("%s/%s/%s", m["manager"], m["operation"], sub)] = string(fields)
	}
	return out
}

func (ts *testServer) apply(t testing.TB, path, manager, query, body string) (*http.Response, []byte) {
	t.Helper()
	q := "?fieldManager=" + manager
	if manager == "" {
		q = "?"
	}
	if query != "" {
		q += "&" + query
	}
	return ts.do(t, req{method: "PATCH", path: path + q, contentType: applyType, body: body})
}

func TestApply(t *testing.T) {
	ts := newTestServer(t)
	yamlBody := func(size int, owner string) string {
		return fmt.Sprintf("apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\nspec:\n  size: %d\n  owner: %s\n", size, owner)
	}

	// Dry run: answered, not kept.
	resp, b := ts.apply(t, ns+"/a", "alice", "dryRun=All", yamlBody(1, "ox"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("dry-run apply: %d %s", resp.StatusCode, b)
	}
	if resp, _ := ts.do(t, req{method: "GET", path: ns + "/a"}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a dry-run apply created the object: %d", resp.StatusCode)
	}

	// Create on missing.
	resp, b = ts.apply(t, ns+"/a", "alice", "", yamlBody(1, "ox"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("apply create: %d %s", resp.StatusCode, b)
	}
	got := decode(t, b)
	if m := managers(t, got); m["alice/Apply/"] != `{"f:spec":{"f:owner":{},"f:size":{}}}` || len(m) != 1 {
		t.Errorf("managers after the first apply = %v", m)
	}

	// The same manager changes its field: merged, no conflict with itself.
	resp, b = ts.apply(t, ns+"/a", "alice", "", yamlBody(2, "ox"))
	if got = decode(t, b); resp.StatusCode != 200 || path(got, "spec.size") != 2.0 {
		t.Fatalf("second apply: %d %s", resp.StatusCode, b)
	}

	// Another manager sets a field alice owns to another value: 409, one cause per field.
	resp, b = ts.apply(t, ns+"/a", "bob", "", yamlBody(3, "oy"))
	st := wantStatus(t, resp, b, http.StatusConflict, meta.StatusReasonConflict,
		"Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.owner\n- .spec.size")
	if st.Details == nil || len(st.Details.Causes) != 2 || st.Details.Causes[0].Type != "FieldManagerConflict" ||
		st.Details.Causes[0].Message != `conflict with "alice"` || st.Details.Causes[0].Field != ".spec.owner" {
		t.Errorf("conflict details = %+v", st.Details)
	}
	resp, b = ts.apply(t, ns+"/a", "bob", "", "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\nspec:\n  size: 3\n")
	wantStatus(t, resp, b, http.StatusConflict, meta.StatusReasonConflict, "Apply failed with 1 conflict: conflict with \"alice\": .spec.size")
	// The same value is shared, not a conflict.
	resp, b = ts.apply(t, ns+"/a", "bob", "", "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\nspec:\n  owner: ox\n")
	if m := managers(t, decode(t, b)); resp.StatusCode != 200 || m["bob/Apply/"] != `{"f:spec":{"f:owner":{}}}` {
		t.Errorf("shared apply: %d %v", resp.StatusCode, m)
	}
	// force takes the field over.
	resp, b = ts.apply(t, ns+"/a", "bob", "force=true", "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\nspec:\n  size: 3\n  owner: ox\n")
	got = decode(t, b)
	if m := managers(t, got); resp.StatusCode != 200 || path(got, "spec.size") != 3.0 ||
		m["alice/Apply/"] != `{"f:spec":{"f:owner":{}}}` || m["bob/Apply/"] != `{"f:spec":{"f:owner":{},"f:size":{}}}` {
		t.Errorf("forced apply: %d %v", resp.StatusCode, m)
	}
	// alice stops applying owner; bob still owns it, so it stays.
	resp, b = ts.apply(t, ns+"/a", "alice", "", "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\n")
	if got = decode(t, b); resp.StatusCode != 200 || path(got, "spec.owner") != "ox" {
		t.Errorf("apply dropping a shared field: %d %s", resp.StatusCode, b)
	}
	// bob stops applying size: nobody owns it, it is removed.
	resp, b = ts.apply(t, ns+"/a", "bob", "", "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\nspec:\n  owner: ox\n")
	if got = decode(t, b); resp.StatusCode != 200 || path(got, "spec.size") != nil {
		t.Errorf("apply dropping an owned field: %d %s", resp.StatusCode, b)
	}

	// Status through its subresource, JSON being YAML.
	resp, b = ts.apply(t, ns+"/a/status", "ctl", "", `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"a"},"status":{"ready":true}}`)
	if got = decode(t, b); resp.StatusCode != 200 || path(got, "status.ready") != true || managers(t, got)["ctl/Apply/status"] != `{"f:status":{"f:ready":{}}}` {
		t.Errorf("status apply: %d %s", resp.StatusCode, b)
	}
	// Status applied through the main resource is not owned there.
	resp, b = ts.apply(t, ns+"/a", "bob", "", "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\nspec:\n  owner: ox\nstatus:\n  ready: false\n")
	if m := managers(t, decode(t, b)); resp.StatusCode != 200 || strings.Contains(m["bob/Apply/"], "status") {
		t.Errorf("status through the main resource: %d %v", resp.StatusCode, m)
	}
}

func TestApplyErrors(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "a", `{"size":1}`)
	good := "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: a\n"
	tests := []struct {
		name, query, manager, body string
		code                       int
		reason                     meta.StatusReason
		message                    string
	}{
		{"no field manager", "", "", good, 422, meta.StatusReasonInvalid,
			`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"wrong kind", "", "m", "apiVersion: test.example.com/v1\nkind: Gadget\nmetadata:\n  name: a\n", 400, meta.StatusReasonBadRequest,
			"invalid object type: test.example.com/v1, Kind=Gadget"},
		{"wrong version", "", "m", "apiVersion: v1\nkind: Widget\nmetadata:\n  name: a\n", 400, meta.StatusReasonBadRequest,
			"invalid object type: v1, Kind=Widget"},
		{"managedFields set", "", "m", good + "  managedFields:\n  - manager: x\n", 400, meta.StatusReasonBadRequest,
			"metadata.managedFields must be nil"},
		{"other name", "", "m", strings.Replace(good, "name: a", "name: b", 1), 400, meta.StatusReasonBadRequest,
			"the name of the object (b) does not match the name on the URL (a)"},
		{"not YAML", "", "m", "{", 400, meta.StatusReasonBadRequest,
			"error decoding YAML: yaml: line 1: did not find expected node content"},
		{"unknown field, strict", "fieldValidation=Strict", "m", good + "spec:\n  bogus: 1\n", 400, meta.StatusReasonBadRequest,
			`Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := ts.apply(t, ns+"/a", tt.manager, tt.query, tt.body)
			wantStatus(t, resp, b, tt.code, tt.reason, tt.message)
		})
	}
	t.Run("force on a merge patch", func(t *testing.T) {
		resp, b := ts.do(t, req{method: "PATCH", path: ns + "/a?force=true", contentType: "application/merge-patch+json", body: `{}`})
		wantStatus(t, resp, b, 422, meta.StatusReasonInvalid, `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`)
	})
}

// TestManagedFieldsPerVerb: every write records its manager's fields.
func TestManagedFieldsPerVerb(t *testing.T) {
	ts := newTestServer(t)
	do := func(r req, ua string) map[string]any {
		t.Helper()
		hr, _ := http.NewRequest(r.method, ts.URL+r.path, strings.NewReader(r.body))
		hr.Header.Set("Content-Type", r.contentType)
		if r.contentType == "" {
			hr.Header.Set("Content-Type", "application/json")
		}
		hr.Header.Set("User-Agent", ua)
		resp, err := ts.Client().Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %v %v", r.method, r.path, resp.StatusCode, m, err)
		}
		return m
	}
	// Create: the User-Agent's first part names the manager.
	got := do(req{method: "POST", path: ns, body: `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":"b"}},"spec":{"size":1}}`}, "kubectl/v1.37.0 (linux/amd64) kubernetes/abc")
	if m := managers(t, got); m["kubectl/Update/"] != `{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:size":{}}}` || len(m) != 1 {
		t.Errorf("create: %v", m)
	}
	// Merge patch with a fieldManager.
	got = do(req{method: "PATCH", path: ns + "/w?fieldManager=patcher", contentType: "application/merge-patch+json", body: `{"spec":{"owner":"o"}}`}, "x")
	if m := managers(t, got); m["patcher/Update/"] != `{"f:spec":{"f:owner":{}}}` || m["kubectl/Update/"] == "" {
		t.Errorf("merge patch: %v", m)
	}
	// JSON patch and strategic merge patch.
	got = do(req{method: "PATCH", path: ns + "/w", contentType: "application/json-patch+json", body: `[{"op":"replace","path":"/spec/size","value":5}]`}, "jp/1")
	if m := managers(t, got); m["jp/Update/"] != `{"f:spec":{"f:size":{}}}` || strings.Contains(m["kubectl/Update/"], "size") {
		t.Errorf("json patch: %v (size moves to jp)", m)
	}
	got = do(req{method: "PATCH", path: ns + "/w", contentType: "application/strategic-merge-patch+json", body: `{"spec":{"tags":["t"]}}`}, "smp")
	if m := managers(t, got); m["smp/Update/"] != `{"f:spec":{"f:tags":{".":{},"v:\"t\"":{}}}}` {
		t.Errorf("strategic merge patch: %v", m)
	}
	// PUT without managedFields keeps them, and records its own.
	obj := got
	delete(obj["metadata"].(map[string]any), "managedFields")
	obj["spec"].(map[string]any)["main"] = map[string]any{"name": "m"}
	body, _ := json.Marshal(obj)
	got = do(req{method: "PUT", path: ns + "/w", body: string(body)}, "putter")
	if m := managers(t, got); len(m) != 5 || m["putter/Update/"] != `{"f:spec":{"f:main":{".":{},"f:name":{}}}}` {
		t.Errorf("put without managedFields: %v", m)
	}
	// Status PUT is its own manager, on the subresource.
	got["status"] = map[string]any{"ready": true}
	body, _ = json.Marshal(got)
	got = do(req{method: "PUT", path: ns + "/w/status", body: string(body)}, "putter")
	if m := managers(t, got); m["putter/Update/status"] != `{"f:status":{"f:ready":{}}}` {
		t.Errorf("status put: %v", m)
	}
	// An unchanged write keeps the entries as they were.
	before := managers(t, got)
	got = do(req{method: "PATCH", path: ns + "/w", contentType: "application/merge-patch+json", body: `{}`}, "noop")
	if m := managers(t, got); fmt.Sprint(m) != fmt.Sprint(before) {
		t.Errorf("no-op patch changed managers: %v", m)
	}
	// managedFields: [] clears them; the write's own entry is then the only one.
	got["metadata"].(map[string]any)["managedFields"] = []any{}
	body, _ = json.Marshal(got)
	got = do(req{method: "PUT", path: ns + "/w", body: string(body)}, "resetter")
	if m := managers(t, got); len(m) != 0 {
		t.Errorf("managedFields: [] kept %v", m)
	}
}

// TestUpdateManagersCapped: at most ten Update entries; older ones merge
// into ancient-changes, as kube-apiserver's.
func TestUpdateManagersCapped(t *testing.T) {
	ts := newTestServer(t)
	ts.create(t, "w", "{}")
	for i := 0; i < 12; i++ {
		resp, b := ts.do(t, req{method: "PATCH", path: fmt.Sprintf("%s/w?fieldManager=m%02d", ns, i), contentType: "application/merge-patch+json",
			body: fmt.Sprintf(`{"metadata":{"labels":{"l%02d":"v"}}}`, i)})
		if resp.StatusCode != 200 {
			t.Fatalf("patch %d: %d %s", i, resp.StatusCode, b)
		}
		if i == 11 {
			m := managers(t, decode(t, b))
			if len(m) != 10 || m["ancient-changes/Update/"] == "" {
				t.Errorf("after 12 updaters (and the creator): %d entries %v", len(m), m)
			}
		}
	}
}

// FuzzApply sends arbitrary apply bodies, managers and force to a widget
// that exists and one that does not: every answer is a success whose
// managedFields record the manager, or a Status of the response's code;
// the only 5xx is kube-apiserver's for a configuration its schema does not
// type (a field the type lacks, as kube-apiserver answers it).
//
//	go test ./server/endpoints -run - -fuzz FuzzApply -fuzztime 30s
func FuzzApply(f *testing.F) {
	for _, s := range []struct {
		name, manager string
		force         bool
		body          string
	}{
		{"w", "m", false, "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 2\n"},
		{"n", "m", true, `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"n","labels":{"a":"b"}},"spec":{"parts":[{"name":"p","count":1}],"tags":["x","y"],"named":{"k":{"name":"v"}}}}`},
		{"w", "other", false, `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3,"free":{"a":[1,{"b":null}]}}}`},
		{"w", "", false, `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"w"}}`},
		{"w", "m", false, `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"w","managedFields":[{}]}}`},
		{"w", "m", false, `{"apiVersion":"test.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"parts":[{"name":"a"},{"name":"a"}]}}`},
		{"w", "m", false, "- a\n- b\n"},
	} {
		f.Add(s.name, s.manager, s.force, []byte(s.body))
	}
	ts := newTestServer(f)
	ts.create(f, "w", `{"size":1}`)
	f.Fuzz(func(t *testing.T, name, manager string, force bool, body []byte) {
		if name != "w" {
			name = "n"
		}
		q := url.Values{}
		if manager != "" {
			q.Set("fieldManager", manager)
		}
		if force {
			q.Set("force", "true")
		}
		resp, b := ts.do(t, req{method: "PATCH", path: ns + "/" + name + "?" + q.Encode(), contentType: applyType, body: string(body)})
		if !json.Valid(b) {
			t.Fatalf("%d, not JSON: %q", resp.StatusCode, b)
		}
		if resp.StatusCode >= 400 {
			var st meta.Status
			if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || int(st.Code) != resp.StatusCode || st.Message == "" {
				t.Fatalf("%d with %s, want a Status of that code", resp.StatusCode, b)
			}
			if resp.StatusCode >= 500 && !strings.HasPrefix(st.Message, "failed to create typed patch object") {
				t.Fatalf("%q: %d %s", body, resp.StatusCode, b)
			}
			return
		}
		var obj meta.PartialObjectMetadata
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatalf("%v in %s", err, b)
		}
		found := false
		for _, e := range obj.ManagedFields {
			if e.FieldsType != "FieldsV1" || e.APIVersion != "test.example.com/v1" || (e.Operation != "Apply" && e.Operation != "Update") {
				t.Fatalf("bad entry %+v in %s", e, b)
			}
			found = found || (e.Manager == manager && e.Operation == "Apply")
		}
		// An apply that leaves the manager nothing to own (only
		// server-set fields) records no entry.
		if !found && strings.Contains(string(body), "spec") && resp.StatusCode == 201 {
			t.Logf("no Apply entry for %q after %s", manager, body)
		}
	})
}

// TestTooLargeRetriedWithoutManagedFields: a write that storage refuses as
// too large with its managedFields is written again without them, as
// kube-apiserver does; apply is not retried.
func TestTooLargeRetriedWithoutManagedFields(t *testing.T) {
	mem := memory.New(memory.WithMaxObjectBytes(2048))
	t.Cleanup(func() { _ = mem.Close() })
	widgets, err := registry.NewStore(registry.Options[*Widget]{
		Resource: meta.GroupResource{Group: group, Resource: "widgets"}, Kind: "Widget", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*Widget]{}, Storage: mem, AllowCreateOnUpdate: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, hs := serveGroup(t, server.NewAPIGroupInfo(group).AddVersion("v1", registry.Serve(widgets)), []string{authn.SystemPrivilegedGroup})
	ts := &testServer{Server: hs}

	// Labels of ~1.1 KB: the object fits, its labels' managedFields
	// (about as large again) do not.
	labels := map[string]string{}
	for i := range 30 {
		labels[fmt.Sprintf("label-%02d-%s", i, strings.Repeat("x", 20))] = "v"
	}
	body, _ := json.Marshal(map[string]any{"apiVersion": "test.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "big", "labels": labels}})
	rv := ""
	for _, w := range []struct {
		method, path, contentType string
		code                      int
	}{
		{"POST", ns, "application/json", 201},
		{"PUT", ns + "/big", "application/json", 200},
		{"PATCH", ns + "/big", "application/merge-patch+json", 200},
	} {
		b := string(body)
		switch w.method {
		case "PUT":
			b = strings.Replace(b, `"name":"big"`, `"name":"big","resourceVersion":"`+rv+`"`, 1)
		case "PATCH":
			// Every label changes hands: the patcher's entry is as
			// large as the labels.
			b = `{"metadata":{"labels":` + strings.ReplaceAll(string(must(json.Marshal(labels))), `"v"`, `"w"`) + `}}`
		}
		resp, out := ts.do(t, req{method: w.method, path: w.path, body: b, contentType: w.contentType})
		if resp.StatusCode != w.code {
			t.Fatalf("%s: %d %s", w.method, resp.StatusCode, out)
		}
		m := decode(t, out)
		if path(m, "metadata.managedFields") != nil {
			t.Errorf("%s kept managedFields that do not fit", w.method)
		}
		rv, _ = path(m, "metadata.resourceVersion").(string)
	}
	resp, b := ts.apply(t, ns+"/big", "m", "", string(body))
	wantStatus(t, resp, b, http.StatusRequestEntityTooLarge, meta.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 2048")
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestApplyAcrossVersions: field sets recorded in one served version are
// converted to be compared with writes in another, as kube-apiserver
// converts them: wardle's v1alpha1 spec.reference is v1beta1's
// spec.flunderReference.
func TestApplyAcrossVersions(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	api, err := wardleapi.New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	group, err := api.GroupInfo()
	if err != nil {
		t.Fatal(err)
	}
	_, hs := serveGroup(t, group, []string{authn.SystemPrivilegedGroup})
	ts := &testServer{Server: hs}
	const (
		beta  = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders/f"
		alpha = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/f"
	)
	resp, b := ts.apply(t, beta, "a", "", "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: f\nspec:\n  flunderReference: r1\n")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("apply in v1beta1: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.do(t, req{method: "PATCH", path: alpha + "?fieldManager=b", contentType: "application/merge-patch+json", body: `{"metadata":{"labels":{"x":"y"}}}`})
	if resp.StatusCode != 200 {
		t.Fatalf("patch in v1alpha1: %d %s", resp.StatusCode, b)
	}
	entries := map[string]string{}
	for _, e := range path(decode(t, b), "metadata.managedFields").([]any) {
		m := e.(map[string]any)
		fields, _ := json.Marshal(m["fieldsV1"])
		entries[fmt.Sprintf("%s/%s", m["manager"], m["apiVersion"])] = string(fields)
	}
	if entries["a/wardle.example.com/v1beta1"] != `{"f:spec":{"f:flunderReference":{}}}` ||
		entries["b/wardle.example.com/v1alpha1"] != `{"f:metadata":{"f:labels":{".":{},"f:x":{}}}}` {
		t.Errorf("entries after a write in the other version: %v", entries)
	}
	// a's v1beta1 field is v1alpha1's spec.reference: a conflict there,
	// named in the version a recorded it in, as kube-apiserver names it.
	resp, b = ts.apply(t, alpha, "c", "", "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: f\nspec:\n  reference: r2\n")
	wantStatus(t, resp, b, http.StatusConflict, meta.StatusReasonConflict, `Apply failed with 1 conflict: conflict with "a": .spec.flunderReference`)
}

// ownerDefaulting defaults a Widget's spec.owner, as a resource's
// defaulting functions fill what a client leaves out.
type ownerDefaulting struct {
	registry.DefaultStrategy[*Widget]
}

func (ownerDefaulting) Default(w *Widget) {
	if w.Spec.Owner == "" {
		w.Spec.Owner = "defaulted"
	}
}

// TestManagedFieldsOfDefaults: the fields a write's defaults set are the
// writer's, as kube-apiserver defaults a body when it decodes it, before
// its field manager records the write (a Secret's type, a Namespace's
// name label): create, PUT and patches.
func TestManagedFieldsOfDefaults(t *testing.T) {
	mem := memory.New(memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = mem.Close() })
	widgets, err := registry.NewStore(registry.Options[*Widget]{
		Resource: meta.GroupResource{Group: group, Resource: "widgets"}, Kind: "Widget", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: ownerDefaulting{}, Storage: mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, hs := serveGroup(t, server.NewAPIGroupInfo(group).AddVersion("v1", registry.Serve(widgets)), []string{"testers"})
	ts := &testServer{Server: hs}
	write := func(r req) map[string]any {
		t.Helper()
		resp, b := ts.do(t, r)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", r.method, r.path, resp.StatusCode, b)
		}
		return decode(t, b)
	}
	const owned = `{"f:spec":{"f:owner":{},"f:size":{}}}`
	got := write(req{method: "POST", path: ns + "?fieldManager=creator", body: `{"metadata":{"name":"w"},"spec":{"size":1}}`})
	if m := managers(t, got); m["creator/Update/"] != owned {
		t.Errorf("create: %v, want creator to own %s", m, owned)
	}
	// A PUT that leaves owner out gets it from the defaults again: its
	// writer owns it, as it owns what it sent.
	got["spec"] = map[string]any{"size": 2}
	body, _ := json.Marshal(got)
	got = write(req{method: "PUT", path: ns + "/w?fieldManager=putter", body: string(body)})
	if m := managers(t, got); m["putter/Update/"] != `{"f:spec":{"f:size":{}}}` || m["creator/Update/"] != `{"f:spec":{"f:owner":{}}}` {
		t.Errorf("put: %v", m)
	}
	// A merge patch that removes owner: the default puts it back, and the
	// patcher, whose write changed it, owns it.
	got = write(req{method: "PATCH", path: ns + "/w?fieldManager=patcher", contentType: "application/merge-patch+json", body: `{"spec":{"owner":null}}`})
	if path(got, "spec.owner") != "defaulted" {
		t.Fatalf("patched owner: %v", path(got, "spec.owner"))
	}
	got = write(req{method: "PATCH", path: ns + "/w?fieldManager=patcher", contentType: "application/merge-patch+json", body: `{"spec":{"owner":"x"}}`})
	if m := managers(t, got); m["patcher/Update/"] != `{"f:spec":{"f:owner":{}}}` {
		t.Errorf("merge patch: %v", m)
	}
}
