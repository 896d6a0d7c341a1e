package extensions_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/extensions"
	"github.com/apikit-dev/apikit/testenv"
)

// client talks to a test server as its administrator.
type client struct {
	t    *testing.T
	host string
	c    *http.Client
}

// startExtensions starts an extensions server, its config first changed
// by configure (admission plugins, say), and returns a client of it.
func startExtensions(t *testing.T, configure ...func(*server.Config)) *client {
	t.Helper()
	env := testenv.Start(t, func(c *server.Config) (*server.GenericServer, error) {
		for _, f := range configure {
			f(c)
		}
		_, ext, err := newExtensions(c)
		if err != nil {
			return nil, err
		}
		return ext.GenericServer, nil
	})
	hc, err := env.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	hc.Timeout = 30 * time.Second
	return &client{t: t, host: env.Host, c: hc}
}

// newExtensions builds an extensions server at the end of a chain.
func newExtensions(c *server.Config) (server.CompletedConfig, *extensions.Server, error) {
	completed, err := c.Complete()
	if err != nil {
		return server.CompletedConfig{}, nil, err
	}
	ext, err := extensions.New(completed, nil, extensions.Config{})
	return completed, ext, err
}

// do sends a request and returns the status and body.
func (c *client) do(method, path, contentType, body string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.host+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (c *client) must(want int, method, path, contentType, body string) map[string]any {
	c.t.Helper()
	code, b := c.do(method, path, contentType, body)
	if code != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, b)
	}
	var m map[string]any
	if len(bytes.TrimSpace(b)) > 0 && json.Unmarshal(b, &m) != nil {
		c.t.Fatalf("%s %s: not a JSON object: %s", method, path, b)
	}
	return m
}

// eventually polls f until it returns "" or the deadline passes.
func eventually(t *testing.T, what string, f func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const widgetsCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"color": {"type": "string"}, "replicas": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}}}}}},
      "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
      "additionalPrinterColumns": [{"name": "Color", "type": "string", "jsonPath": ".spec.color"}, {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
      "selectableFields": [{"jsonPath": ".spec.color"}]
    }]
  }
}`

func condition(crd map[string]any, typ string) (status, reason, message string) {
	st, _ := crd["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

func (c *client) waitEstablished(name string) {
	c.t.Helper()
	eventually(c.t, name+" Established", func() string {
		crd := c.must(200, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, "", "")
		if s, _, _ := condition(crd, "Established"); s != "True" {
			return "not established: " + fmt.Sprint(crd["status"])
		}
		return ""
	})
}

// waitServed waits until a GET of the collection at path answers 200.
func (c *client) waitServed(path string) {
	c.t.Helper()
	eventually(c.t, path+" served", func() string {
		if code, b := c.do("GET", path, "", ""); code != 200 {
			return fmt.Sprintf("%d %s", code, b)
		}
		return ""
	})
}

func TestCustomResourcesServed(t *testing.T) {
	c := startExtensions(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crd := c.must(201, "POST", crds, "application/json", widgetsCRD)
	if got := crd["status"].(map[string]any)["storedVersions"]; fmt.Sprint(got) != "[v1]" {
		t.Errorf("storedVersions = %v, want [v1]", got)
	}
	c.waitEstablished("widgets.example.com")
	crd = c.must(200, "GET", crds+"/widgets.example.com", "", "")
	if s, r, m := condition(crd, "NamesAccepted"); s != "True" || r != "NoConflicts" || m != "no conflicts found" {
		t.Errorf("NamesAccepted = %s %s %s", s, r, m)
	}
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	c.waitServed(widgets)
	w := c.must(201, "POST", widgets, "application/json",
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","labels":{"a":"b"}},"spec":{"color":"red","replicas":2},"status":{"replicas":9}}`)
	if w["status"] != nil {
		t.Errorf("create kept status %v: status is the subresource's", w["status"])
	}
	if g := w["metadata"].(map[string]any)["generation"]; fmt.Sprint(g) != "1" {
		t.Errorf("generation = %v", g)
	}
	c.must(201, "POST", widgets, "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"color":"blue"}}`)

	// Field selectors on the selectable field, label selectors.
	l := c.must(200, "GET", widgets+"?fieldSelector=spec.color%3Dblue", "", "")
	if items := l["items"].([]any); len(items) != 1 || items[0].(map[string]any)["metadata"].(map[string]any)["name"] != "w2" {
		t.Errorf("fieldSelector spec.color=blue gave %v", items)
	}
	if l["kind"] != "WidgetList" || l["apiVersion"] != "example.com/v1" {
		t.Errorf("list kind %v %v", l["kind"], l["apiVersion"])
	}
	l = c.must(200, "GET", widgets+"?labelSelector=a%3Db", "", "")
	if items := l["items"].([]any); len(items) != 1 {
		t.Errorf("labelSelector a=b gave %d items", len(items))
	}

	// The printer columns in a Table.
	req, _ := http.NewRequest("GET", c.host+widgets, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		ColumnDefinitions []struct{ Name string }
		Rows              []struct{ Cells []any }
	}
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cols []string
	for _, d := range table.ColumnDefinitions {
		cols = append(cols, d.Name)
	}
	if strings.Join(cols, ",") != "Name,Color,Replicas" {
		t.Errorf("columns %v, want Name,Color,Replicas", cols)
	}
	if len(table.Rows) != 2 || fmt.Sprint(table.Rows[0].Cells) != "[w1 red 2]" || fmt.Sprint(table.Rows[1].Cells) != "[w2 blue <nil>]" {
		t.Errorf("rows %v", table.Rows)
	}

	// Status only through /status.
	c.must(200, "PATCH", widgets+"/w1/status", "application/merge-patch+json", `{"status":{"replicas":2,"selector":"a=b"}}`)
	w = c.must(200, "PATCH", widgets+"/w1", "application/merge-patch+json", `{"status":{"replicas":7}}`)
	if r := w["status"].(map[string]any)["replicas"]; fmt.Sprint(r) != "2" {
		t.Errorf("status.replicas = %v after a patch of the main resource, want 2", r)
	}

	// Scale.
	sc := c.must(200, "GET", widgets+"/w1/scale", "", "")
	if sc["kind"] != "Scale" || sc["apiVersion"] != "autoscaling/v1" || fmt.Sprint(sc["spec"]) != "map[replicas:2]" ||
		fmt.Sprint(sc["status"]) != "map[replicas:2 selector:a=b]" {
		t.Errorf("scale %v", sc)
	}
	c.must(200, "PATCH", widgets+"/w1/scale", "application/merge-patch+json", `{"spec":{"replicas":5}}`)
	w = c.must(200, "GET", widgets+"/w1", "", "")
	if r := w["spec"].(map[string]any)["replicas"]; fmt.Sprint(r) != "5" {
		t.Errorf("spec.replicas = %v after scaling to 5", r)
	}
	if g := w["metadata"].(map[string]any)["generation"]; fmt.Sprint(g) != "2" {
		t.Errorf("generation = %v after scaling, want 2", g)
	}

	// Discovery lists the resource with its subresources.
	rl := c.must(200, "GET", "/apis/example.com/v1", "", "")
	b, _ := json.Marshal(rl["resources"])
	for _, want := range []string{`"name":"widgets"`, `"shortNames":["wd"]`, `"categories":["all"]`, `"name":"widgets/status"`,
		`"group":"autoscaling","kind":"Scale","name":"widgets/scale"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("discovery %s lacks %s", b, want)
		}
	}
	groups := c.must(200, "GET", "/apis", "", "")
	b, _ = json.Marshal(groups)
	if !strings.Contains(string(b), `"name":"example.com"`) {
		t.Errorf("/apis lacks example.com: %s", b)
	}

	// OpenAPI v2 and v3 document the kind from its schema.
	var v2 struct {
		Definitions map[string]struct {
			Properties map[string]any
			Extensions []any `json:"x-kubernetes-group-version-kind"`
		}
	}
	_, b = c.do("GET", "/openapi/v2", "", "")
	if err := json.Unmarshal(b, &v2); err != nil {
		t.Fatal(err)
	}
	def := v2.Definitions["com.example.v1.Widget"]
	if _, ok := def.Properties["spec"]; !ok || def.Properties["metadata"] == nil || len(def.Extensions) != 1 {
		t.Errorf("definition com.example.v1.Widget: %+v", def)
	}
	if _, ok := v2.Definitions["com.example.v1.WidgetList"]; !ok {
		t.Error("no definition com.example.v1.WidgetList")
	}
	c.must(200, "GET", "/openapi/v3/apis/example.com/v1", "", "")

	// Deleting the CRD deletes its custom resources first, then stops
	// serving them.
	c.must(200, "DELETE", crds+"/widgets.example.com", "", "")
	eventually(t, "CRD deleted", func() string {
		if code, b := c.do("GET", crds+"/widgets.example.com", "", ""); code != 404 {
			return fmt.Sprintf("%d %s", code, b)
		}
		return ""
	})
	eventually(t, "widgets unserved", func() string {
		if code, b := c.do("GET", widgets, "", ""); code != 404 {
			return fmt.Sprintf("%d %s", code, b)
		}
		return ""
	})
	// Recreated, the CRD has no objects left from before.
	c.must(201, "POST", crds, "application/json", widgetsCRD)
	c.waitEstablished("widgets.example.com")
	eventually(t, "widgets served again", func() string {
		code, b := c.do("GET", widgets, "", "")
		if code != 200 {
			return fmt.Sprintf("%d %s", code, b)
		}
		var l struct{ Items []any }
		json.Unmarshal(b, &l)
		if len(l.Items) != 0 {
			return fmt.Sprintf("%d widgets survived their CRD", len(l.Items))
		}
		return ""
	})
}

const gizmosCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gizmos.example.com"},
  "spec": {
    "group": "example.com", "scope": "Cluster",
    "names": {"plural": "gizmos", "kind": "Gizmo"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
          "size": {"type": "string", "default": "medium"%s},
          "replicas": {"type": "integer", "maximum": 10}}}}}}
    }]
  }
}`

// Custom resources are pruned, defaulted (on writes and on reads from
// storage) and validated by their schema, with kube-apiserver's messages.
func TestCustomResourceSchemas(t *testing.T) {
	c := startExtensions(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crd := c.must(201, "POST", crds, "application/json", fmt.Sprintf(gizmosCRD, ""))
	if n := crd["spec"].(map[string]any)["names"].(map[string]any); n["singular"] != "gizmo" || n["listKind"] != "GizmoList" {
		t.Errorf("names not defaulted: %v", n)
	}
	c.waitEstablished("gizmos.example.com")
	const gizmos = "/apis/example.com/v1/gizmos"
	c.waitServed(gizmos)
	g := c.must(201, "POST", gizmos, "application/json", `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g1"},"spec":{"replicas":3,"color":"red"},"extra":1}`)
	if fmt.Sprint(g["spec"]) != "map[replicas:3 size:medium]" || g["extra"] != nil {
		t.Errorf("not defaulted and pruned: %v", g)
	}
	// Pruned fields are unknown fields to field validation.
	code, b := c.do("POST", gizmos+"?fieldValidation=Strict", "application/json", `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g4"},"spec":{"colour":"red"}}`)
	if want := `strict decoding error: unknown field \"spec.colour\"`; code != 400 || !strings.Contains(string(b), want) {
		t.Errorf("unknown field under Strict: %d %s, want 400 with %s", code, b, want)
	}
	req, _ := http.NewRequest("POST", c.host+gizmos, strings.NewReader(`{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g4"},"spec":{"colour":"red"}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if w := resp.Header.Get("Warning"); resp.StatusCode != 201 || !strings.Contains(w, `unknown field \"spec.colour\"`) {
		t.Errorf("unknown field: %d, Warning %q", resp.StatusCode, w)
	}

	code, b = c.do("POST", gizmos, "application/json", `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g2"},"spec":{"replicas":11}}`)
	if want := `Gizmo.example.com \"g2\" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`; code != 422 || !strings.Contains(string(b), want) {
		t.Errorf("replicas 11: %d %s, want 422 with %s", code, b, want)
	}

	// A default the schema gains later shows on objects stored before.
	cur := c.must(200, "GET", crds+"/gizmos.example.com", "", "")
	vs := cur["spec"].(map[string]any)["versions"].([]any)
	spec := vs[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	spec["properties"].(map[string]any)["shape"] = map[string]any{"type": "string", "default": "round"}
	body, _ := json.Marshal(cur)
	c.must(200, "PUT", crds+"/gizmos.example.com", "application/json", string(body))
	eventually(t, "default on read", func() string {
		g := c.must(200, "GET", gizmos+"/g1", "", "")
		if fmt.Sprint(g["spec"]) != "map[replicas:3 shape:round size:medium]" {
			return fmt.Sprint(g["spec"])
		}
		return ""
	})

	// Server-side apply creates and merges by the schema, recording
	// managedFields.
	g = c.must(201, "PATCH", gizmos+"/g3?fieldManager=alice", "application/apply-patch+yaml",
		"apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g3}\nspec: {replicas: 1}\n")
	mf, _ := json.Marshal(g["metadata"].(map[string]any)["managedFields"])
	if !strings.Contains(string(mf), `"manager":"alice","operation":"Apply"`) || !strings.Contains(string(mf), `"f:replicas":{}`) {
		t.Errorf("managedFields %s", mf)
	}
	code, b = c.do("PATCH", gizmos+"/g3?fieldManager=bob", "application/apply-patch+yaml",
		"apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g3}\nspec: {replicas: 2}\n")
	if code != 409 || !strings.Contains(string(b), `conflict with \"alice\"`) {
		t.Errorf("second manager's apply: %d %s, want 409", code, b)
	}

	// A schema that is not structural is refused.
	code, b = c.do("POST", crds, "application/json", strings.Replace(strings.Replace(fmt.Sprintf(gizmosCRD, ""), "gizmos", "gadgets", -1), `"type": "integer", "maximum": 10`, `"maximum": 10`, 1))
	if code != 422 || !strings.Contains(string(b), "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].type: Required value: must not be empty for specified object fields") {
		t.Errorf("non-structural schema: %d %s", code, b)
	}
}

const rulesCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "limits.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "limits", "kind": "Limit"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object",
          "x-kubernetes-validations": [%s],
          "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}}}}}}
    }]
  }
}`

// x-kubernetes-validations rules compile when the CRD is written and
// judge custom resources, transition rules with the old object.
func TestCustomResourceCELRules(t *testing.T) {
	c := startExtensions(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	code, b := c.do("POST", crds, "application/json", fmt.Sprintf(rulesCRD, `{"rule": "self.min <= "}`))
	if code != 422 || !strings.Contains(string(b), "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value") {
		t.Errorf("a rule that does not compile: %d %s", code, b)
	}
	c.must(201, "POST", crds, "application/json", fmt.Sprintf(rulesCRD,
		`{"rule": "self.min <= self.max", "message": "min must not exceed max"}, {"rule": "self.max >= oldSelf.max", "message": "max may not shrink"}`))
	c.waitEstablished("limits.example.com")
	const limits = "/apis/example.com/v1/namespaces/default/limits"
	c.waitServed(limits)
	code, b = c.do("POST", limits, "application/json", `{"apiVersion":"example.com/v1","kind":"Limit","metadata":{"name":"l1"},"spec":{"min":5,"max":1}}`)
	if want := `Limit.example.com \"l1\" is invalid: spec: Invalid value: min must not exceed max`; code != 422 || !strings.Contains(string(b), want) {
		t.Errorf("min > max: %d %s, want 422 with %s", code, b, want)
	}
	c.must(201, "POST", limits, "application/json", `{"apiVersion":"example.com/v1","kind":"Limit","metadata":{"name":"l1"},"spec":{"min":1,"max":5}}`)
	code, b = c.do("PATCH", limits+"/l1", "application/merge-patch+json", `{"spec":{"max":3}}`)
	if code != 422 || !strings.Contains(string(b), "max may not shrink") {
		t.Errorf("a transition rule: %d %s", code, b)
	}
	c.must(200, "PATCH", limits+"/l1", "application/merge-patch+json", `{"spec":{"max":7}}`)
}
