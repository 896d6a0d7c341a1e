package extensions_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A write through /scale is recorded in the object's managedFields as
// kube-apiserver's scale handler records it: the writer's entry,
// subresource scale and no time, owns the replicas, which the entry of
// the object's creator loses; a write of the same replicas changes
// nothing of the writer's.
func TestScaleManagedFields(t *testing.T) {
	c := startExtensions(t)
	c.must(201, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", widgetsCRD)
	c.waitEstablished("widgets.example.com")
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	c.waitServed(widgets)
	c.must(201, "POST", widgets+"?fieldManager=creator", "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"replicas":2,"color":"red"}}`)
	managed := func() string {
		t.Helper()
		w := c.must(200, "GET", widgets+"/w1", "", "")
		var lines []string
		for _, e := range w["metadata"].(map[string]any)["managedFields"].([]any) {
			e := e.(map[string]any)
			fields, _ := json.Marshal(e["fieldsV1"])
			_, timed := e["time"]
			lines = append(lines, strings.Join([]string{e["manager"].(string), e["operation"].(string), e["apiVersion"].(string),
				str(e["subresource"]), string(fields), map[bool]string{true: "timed", false: "no time"}[timed]}, " "))
		}
		return strings.Join(lines, "\n")
	}
	c.must(200, "PATCH", widgets+"/w1/scale?fieldManager=scaler", "application/merge-patch+json", `{"spec":{"replicas":3}}`)
	want := strings.Join([]string{
		`scaler Update example.com/v1 scale {"f:spec":{"f:replicas":{}}} no time`,
		`creator Update example.com/v1  {"f:spec":{".":{},"f:color":{}}} timed`,
	}, "\n")
	if got := managed(); got != want {
		t.Errorf("after scaling, managedFields:\n%s\nwant:\n%s", got, want)
	}
	c.must(200, "PATCH", widgets+"/w1/scale?fieldManager=other", "application/merge-patch+json", `{"spec":{"replicas":3}}`)
	if got := managed(); got != want {
		t.Errorf("after scaling to the same replicas, managedFields:\n%s\nwant:\n%s", got, want)
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
