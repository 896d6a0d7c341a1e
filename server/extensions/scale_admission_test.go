package extensions_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/extensions"
)

// scalePolicy is an admission plugin of the test: it records what it is
// shown of scale writes, turns 100 replicas into 4 and refuses more
// than 5.
type scalePolicy struct {
	admission.Handler
	mu   sync.Mutex
	seen []string
}

func (p *scalePolicy) note(step string, a *admission.Attributes) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, _ := a.Object.(*extensions.Scale)
	old, _ := a.OldObject.(*extensions.Scale)
	if s == nil || old == nil {
		p.seen = append(p.seen, fmt.Sprintf("%s %s %T", step, a.Subresource, a.Object))
		return
	}
	p.seen = append(p.seen, fmt.Sprintf("%s %s %s %s %s %s/%s %d->%d", step, a.Operation, a.Kind, a.Resource, a.Subresource, a.Namespace, a.Name, old.Spec.Replicas, s.Spec.Replicas))
}

func (p *scalePolicy) Admit(_ context.Context, a *admission.Attributes) error {
	p.note("admit", a)
	if s, ok := a.Object.(*extensions.Scale); ok && s.Spec.Replicas == 100 {
		s.Spec.Replicas = 4
	}
	return nil
}

func (p *scalePolicy) Validate(_ context.Context, a *admission.Attributes) error {
	p.note("validate", a)
	if s, ok := a.Object.(*extensions.Scale); ok && s.Spec.Replicas > 5 {
		return meta.NewForbidden(meta.GroupResource{Group: a.Resource.Group, Resource: a.Resource.Resource}, a.Name, errors.New("at most 5 replicas"))
	}
	return nil
}

func (p *scalePolicy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.seen
	p.seen = nil
	return out
}

// A write of /scale is admitted as kube-apiserver admits it: the Scale
// objects, subresource "scale"; a mutation changes the replicas stored,
// a refusal keeps them.
func TestScaleAdmission(t *testing.T) {
	policy := &scalePolicy{Handler: admission.Handler{Operations: []admission.Operation{admission.Update}}}
	c := startExtensions(t, func(c *server.Config) { c.Admission = admission.Chain{policy} })
	c.must(201, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", widgetsCRD)
	c.waitEstablished("widgets.example.com")
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	c.waitServed(widgets)
	c.must(201, "POST", widgets, "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"replicas":2}}`)
	policy.take()

	c.must(200, "PATCH", widgets+"/w1/scale", "application/merge-patch+json", `{"spec":{"replicas":3}}`)
	want := []string{
		"admit UPDATE {autoscaling v1 Scale} {example.com v1 widgets} scale default/w1 2->3",
		"validate UPDATE {autoscaling v1 Scale} {example.com v1 widgets} scale default/w1 2->3",
	}
	if got := policy.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("admission saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	code, body := c.do("PUT", widgets+"/w1/scale", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w1","namespace":"default"},"spec":{"replicas":7}}`)
	if code != http.StatusForbidden || !strings.Contains(string(body), "at most 5 replicas") {
		t.Errorf("PUT of 7 replicas: %d %s", code, body)
	}
	if sc := c.must(200, "GET", widgets+"/w1/scale", "", ""); fmt.Sprint(sc["spec"]) != "map[replicas:3]" {
		t.Errorf("after the refusal: %v", sc["spec"])
	}
	sc := c.must(200, "PUT", widgets+"/w1/scale", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w1","namespace":"default"},"spec":{"replicas":100}}`)
	if fmt.Sprint(sc["spec"]) != "map[replicas:4]" {
		t.Errorf("the mutated Scale: %v", sc["spec"])
	}
	if w := c.must(200, "GET", widgets+"/w1", "", ""); fmt.Sprint(w["spec"]) != "map[replicas:4]" {
		t.Errorf("stored after the mutation: %v", w["spec"])
	}
}

// A write of /scale sends the failures of CEL rules it ratchets as
// warnings, as kube-apiserver does: the rule on spec.look, added after
// the widget was stored, fails on a value the write leaves unchanged.
func TestScaleWarnsRatchetedRules(t *testing.T) {
	c := startExtensions(t)
	crd := func(rules string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
  "spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},
    "versions":[{"name":"v1","served":true,"storage":true,
      "schema":{"openAPIV3Schema":{"type":"object","properties":{
        "spec":{"type":"object","properties":{"replicas":{"type":"integer"},
          "look":{"type":"object","properties":{"color":{"type":"string"}}` + rules + `}}},
        "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}},
      "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}}}]}}`
	}
	c.must(201, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", crd(""))
	c.waitEstablished("widgets.example.com")
	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	c.waitServed(widgets)
	c.must(201, "POST", widgets, "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"replicas":2,"look":{"color":"black"}}}`)
	c.must(200, "PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", "application/merge-patch+json",
		crd(`,"x-kubernetes-validations":[{"rule":"self.color != 'black'","message":"black is not a color"}]`))
	eventually(t, "the rule refuses a create", func() string {
		if code, b := c.do("POST", widgets+"?dryRun=All", "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"look":{"color":"black"}}}`); code != 422 {
			return fmt.Sprintf("%d %s", code, b)
		}
		return ""
	})
	req, err := http.NewRequest("PATCH", c.host+widgets+"/w1/scale", strings.NewReader(`{"spec":{"replicas":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := []string{`299 - "spec.look: Invalid value: black is not a color"`}
	if got := resp.Header.Values("Warning"); resp.StatusCode != 200 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("PATCH of /scale: %d, warnings %q, want 200 and %q", resp.StatusCode, got, want)
	}
}
