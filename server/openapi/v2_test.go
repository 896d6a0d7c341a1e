package openapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/go-openapi/spec"
)

const metaV1 = "io.k8s.apimachinery.pkg.apis.meta.v1."

// served is one resource as the documents must show it.
type served struct {
	group, version, kind, resource string
	namespaced, status             bool
}

func (r served) gv() string { return "/apis/" + r.group + "/" + r.version }

func (r served) ident() string {
	var b strings.Builder
	for _, p := range strings.Split(r.group, ".") {
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	b.WriteString(strings.ToUpper(r.version[:1]) + r.version[1:])
	return b.String()
}

func (r served) definition() string {
	parts := strings.Split(r.group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + r.version + "." + r.kind
}

// operation is one expected operation.
type operation struct {
	path, method, id, action, response string
	body                               string // definition of the body parameter, "" for none
}

// operations lists every operation kube-apiserver documents for r.
func (r served) operations() []operation {
	ns, scope := "", ""
	if r.namespaced {
		ns, scope = "/namespaces/{namespace}", "Namespaced"
	}
	coll := r.gv() + ns + "/" + r.resource
	obj := coll + "/{name}"
	id := func(verb, suffix string) string { return verb + r.ident() + scope + r.kind + suffix }
	def, list := r.definition(), r.definition()+"List"
	ops := []operation{
		{coll, http.MethodGet, id("list", ""), "list", list, ""},
		{coll, http.MethodPost, id("create", ""), "post", def, def},
		{coll, http.MethodDelete, id("deletecollection", ""), "deletecollection", list, metaV1 + "DeleteOptions"},
		{obj, http.MethodGet, id("read", ""), "get", def, ""},
		{obj, http.MethodPut, id("replace", ""), "put", def, def},
		{obj, http.MethodPatch, id("patch", ""), "patch", def, metaV1 + "Patch"},
		{obj, http.MethodDelete, id("delete", ""), "delete", def, metaV1 + "DeleteOptions"},
	}
	if r.namespaced {
		ops = append(ops, operation{r.gv() + "/" + r.resource, http.MethodGet,
			"list" + r.ident() + r.kind + "ForAllNamespaces", "list", list, ""})
	}
	if r.status {
		ops = append(ops,
			operation{obj + "/status", http.MethodGet, id("read", "Status"), "get", def, ""},
			operation{obj + "/status", http.MethodPut, id("replace", "Status"), "put", def, def},
			operation{obj + "/status", http.MethodPatch, id("patch", "Status"), "patch", def, metaV1 + "Patch"})
	}
	return ops
}

var wardle = []served{
	{"wardle.example.com", "v1beta1", "Flunder", "flunders", true, false},
	{"wardle.example.com", "v1alpha1", "Flunder", "flunders", true, false},
	{"wardle.example.com", "v1alpha1", "Fischer", "fischers", false, false},
}

func pathOperation(item spec.PathItem, method string) *spec.Operation {
	return map[string]*spec.Operation{
		http.MethodGet: item.Get, http.MethodPut: item.Put, http.MethodPost: item.Post,
		http.MethodDelete: item.Delete, http.MethodPatch: item.Patch,
	}[method]
}

// checkV2Operations checks every operation of resources in sw.
func checkV2Operations(t *testing.T, sw *spec.Swagger, resources []served) {
	t.Helper()
	for _, r := range resources {
		for _, want := range r.operations() {
			t.Run(want.id, func(t *testing.T) {
				item, ok := sw.Paths.Paths[want.path]
				if !ok {
					t.Fatalf("path %s missing", want.path)
				}
				op := pathOperation(item, want.method)
				if op == nil {
					t.Fatalf("%s %s missing", want.method, want.path)
				}
				if op.ID != want.id {
					t.Errorf("operationId = %q, want %q", op.ID, want.id)
				}
				if got := op.Extensions["x-kubernetes-action"]; got != want.action {
					t.Errorf("x-kubernetes-action = %v, want %s", got, want.action)
				}
				gvk, _ := op.Extensions["x-kubernetes-group-version-kind"].(map[string]any)
				if gvk["group"] != r.group || gvk["version"] != r.version || gvk["kind"] != r.kind {
					t.Errorf("x-kubernetes-group-version-kind = %v, want %s/%s %s", gvk, r.group, r.version, r.kind)
				}
				resp, ok := op.Responses.StatusCodeResponses[http.StatusOK]
				if !ok || resp.Schema == nil || resp.Schema.Ref.String() != "#/definitions/"+want.response {
					t.Errorf("200 response = %+v, want a $ref to %s", resp.Schema, want.response)
				}
				if _, ok := op.Responses.StatusCodeResponses[http.StatusUnauthorized]; !ok {
					t.Error("no 401 response")
				}
				var body *spec.Parameter
				for i, p := range op.Parameters {
					if p.In == "body" {
						body = &op.Parameters[i]
					}
				}
				switch {
				case want.body == "" && body != nil:
					t.Errorf("unexpected body parameter %+v", body)
				case want.body != "" && (body == nil || body.Schema == nil || body.Schema.Ref.String() != "#/definitions/"+want.body):
					t.Errorf("body parameter = %+v, want a $ref to %s", body, want.body)
				case want.body != "" && body.Required != (want.method != http.MethodDelete):
					t.Errorf("body required = %v for %s", body.Required, want.method)
				}
				if want.method == http.MethodPatch && len(op.Consumes) != 4 {
					t.Errorf("PATCH consumes %v, want the four patch types the handler takes", op.Consumes)
				}
				if want.method == http.MethodPatch || want.method == http.MethodPut || want.method == http.MethodPost {
					if !hasParam(op, "fieldValidation", "query") {
						t.Error("no fieldValidation query parameter: kubectl would validate client-side")
					}
				}
				// Every {param} of the path is declared.
				for _, seg := range strings.Split(want.path, "/") {
					if name, ok := strings.CutPrefix(seg, "{"); ok {
						if !hasParam(op, strings.TrimSuffix(name, "}"), "path") {
							t.Errorf("path parameter %s not declared", seg)
						}
					}
				}
			})
		}
	}
}

func hasParam(op *spec.Operation, name, in string) bool {
	for _, p := range op.Parameters {
		if p.Name == name && p.In == in {
			return true
		}
	}
	return false
}

func TestV2Operations(t *testing.T) {
	sw := swagger(t, newWardle(t, nil).Handler)
	if sw.Swagger != "2.0" || sw.Info == nil || sw.Info.Title != "wardle" || sw.Info.Version != "v0.0.1" {
		t.Errorf("header: swagger %q info %+v", sw.Swagger, sw.Info)
	}
	checkV2Operations(t, sw, wardle)

	// Operation ids are unique, as Swagger requires.
	seen := map[string]string{}
	for path, item := range sw.Paths.Paths {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch} {
			if op := pathOperation(item, m); op != nil {
				if other, dup := seen[op.ID]; dup {
					t.Errorf("operationId %s used by %s and %s %s", op.ID, other, m, path)
				}
				seen[op.ID] = m + " " + path
			}
		}
	}

	// The discovery route of each group-version, as kube-apiserver names it.
	for _, v := range []string{"v1beta1", "v1alpha1"} {
		item, ok := sw.Paths.Paths["/apis/wardle.example.com/"+v+"/"]
		if !ok || item.Get == nil {
			t.Fatalf("discovery path of %s missing", v)
		}
		if want := "getWardleExampleCom" + strings.ToUpper(v[:1]) + v[1:] + "APIResources"; item.Get.ID != want {
			t.Errorf("discovery operationId = %q, want %q", item.Get.ID, want)
		}
		if s := item.Get.Responses.StatusCodeResponses[200].Schema; s == nil || s.Ref.String() != "#/definitions/"+metaV1+"APIResourceList" {
			t.Errorf("discovery response = %+v", s)
		}
	}
}

func TestV2Definitions(t *testing.T) {
	sw := swagger(t, newWardle(t, nil).Handler)
	defs := sw.Definitions
	gvkOf := func(name string) []string {
		list, _ := defs[name].Extensions["x-kubernetes-group-version-kind"].([]any)
		var out []string
		for _, e := range list {
			m := e.(map[string]any)
			out = append(out, fmt.Sprintf("%s/%s/%s", m["group"], m["version"], m["kind"]))
		}
		return out
	}
	for name, want := range map[string]string{
		"com.example.wardle.v1beta1.Flunder":      "wardle.example.com/v1beta1/Flunder",
		"com.example.wardle.v1beta1.FlunderList":  "wardle.example.com/v1beta1/FlunderList",
		"com.example.wardle.v1alpha1.Flunder":     "wardle.example.com/v1alpha1/Flunder",
		"com.example.wardle.v1alpha1.FlunderList": "wardle.example.com/v1alpha1/FlunderList",
		"com.example.wardle.v1alpha1.Fischer":     "wardle.example.com/v1alpha1/Fischer",
		"com.example.wardle.v1alpha1.FischerList": "wardle.example.com/v1alpha1/FischerList",
		metaV1 + "Status":                         "/v1/Status",
	} {
		if got := gvkOf(name); len(got) != 1 || got[0] != want {
			t.Errorf("%s: x-kubernetes-group-version-kind = %v, want [%s]", name, got, want)
		}
	}
	if got := gvkOf(metaV1 + "DeleteOptions"); strings.Join(got, " ") !=
		"/v1/DeleteOptions wardle.example.com/v1beta1/DeleteOptions wardle.example.com/v1alpha1/DeleteOptions" {
		t.Errorf("DeleteOptions GVKs = %v", got)
	}
	for _, name := range []string{"ObjectMeta", "ListMeta", "OwnerReference", "ManagedFieldsEntry", "FieldsV1",
		"Time", "Status", "StatusDetails", "StatusCause", "DeleteOptions", "Preconditions", "Patch", "APIResourceList", "APIResource"} {
		d, ok := defs[metaV1+name]
		if !ok {
			t.Errorf("definition %s missing", metaV1+name)
			continue
		}
		if d.Description == "" {
			t.Errorf("%s has no description", name)
		}
		if len(d.Type) != 1 {
			t.Errorf("%s has type %v", name, d.Type)
		}
	}
	if tm := defs[metaV1+"Time"]; !tm.Type.Contains("string") || tm.Format != "date-time" || len(tm.Properties) > 0 {
		t.Errorf("Time = %+v, want a date-time string", tm.SchemaProps)
	}
	if fv := defs[metaV1+"ManagedFieldsEntry"].Properties["fieldsV1"]; fv.Ref.String() != "#/definitions/"+metaV1+"FieldsV1" {
		t.Errorf("fieldsV1 = %+v", fv.SchemaProps)
	}
	om := defs[metaV1+"ObjectMeta"]
	if len(om.Required) != 0 {
		t.Errorf("ObjectMeta requires %v; Kubernetes requires nothing", om.Required)
	}
	for _, f := range []string{"name", "generateName", "namespace", "uid", "resourceVersion", "generation",
		"creationTimestamp", "deletionTimestamp", "labels", "annotations", "ownerReferences", "finalizers", "managedFields"} {
		if !strings.Contains(om.Properties[f].Description, " ") {
			t.Errorf("ObjectMeta.%s has no description", f)
		}
	}
	if ct := om.Properties["creationTimestamp"]; ct.Ref.String() != "#/definitions/"+metaV1+"Time" {
		t.Errorf("creationTimestamp = %+v", ct.SchemaProps)
	}
	if own := defs[metaV1+"OwnerReference"]; strings.Join(own.Required, ",") != "apiVersion,kind,name,uid" {
		t.Errorf("OwnerReference requires %v", own.Required)
	}

	fl := defs["com.example.wardle.v1beta1.Flunder"]
	if !strings.HasPrefix(fl.Description, "Flunder is") {
		t.Errorf("Flunder description = %q (from its SwaggerDoc)", fl.Description)
	}
	for field, want := range map[string]string{
		"apiVersion": "APIVersion defines", "kind": "Kind is a string", "metadata": "Standard object's metadata",
		"spec": "Spec is the desired state",
	} {
		if got := fl.Properties[field].Description; !strings.HasPrefix(got, want) {
			t.Errorf("Flunder.%s description = %q, want it to start with %q", field, got, want)
		}
	}
	if md := fl.Properties["metadata"]; md.Ref.String() != "#/definitions/"+metaV1+"ObjectMeta" {
		t.Errorf("Flunder.metadata = %+v", md.SchemaProps)
	}
	spc := defs["com.example.wardle.v1beta1.FlunderSpec"]
	if got := spc.Properties["flunderReference"].Description; got != "A name of another flunder, mutually exclusive to the FischerReference." {
		t.Errorf("flunderReference description = %q (from its description tag)", got)
	}
	if rt := spc.Properties["referenceType"]; !rt.Type.Contains("string") || len(rt.Enum) != 2 {
		t.Errorf("referenceType = %+v, want a string enum", rt.SchemaProps)
	}
	list := defs["com.example.wardle.v1beta1.FlunderList"]
	if items := list.Properties["items"]; items.Items == nil || items.Items.Schema == nil ||
		items.Items.Schema.Ref.String() != "#/definitions/com.example.wardle.v1beta1.Flunder" {
		t.Errorf("FlunderList.items = %+v", items.SchemaProps)
	}
	if md := list.Properties["metadata"]; md.Ref.String() != "#/definitions/"+metaV1+"ListMeta" {
		t.Errorf("FlunderList.metadata = %+v", md.SchemaProps)
	}
	if strings.Join(list.Required, ",") != "items" {
		t.Errorf("FlunderList requires %v", list.Required)
	}
}

// TestV2Expands resolves every reference of the document with go-openapi's
// own expander, as tools that validate Swagger documents do.
func TestV2Expands(t *testing.T) {
	sw := swagger(t, newWardle(t, nil).Handler)
	if err := spec.ExpandSpec(sw, &spec.ExpandOptions{}); err != nil {
		t.Fatalf("expanding /openapi/v2: %v", err)
	}
	spc := sw.Paths.Paths["/apis/wardle.example.com/v1beta1/namespaces/{namespace}/flunders/{name}"].Get.
		Responses.StatusCodeResponses[200].Schema.Properties["spec"]
	if _, ok := spc.Properties["flunderReference"]; !ok {
		t.Errorf("expanded Flunder.spec = %+v", spc.SchemaProps)
	}
}
