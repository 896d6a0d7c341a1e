package endpoints_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Thing is stored as v1 (a size in "size") and also served as v2, which
// calls it "bigness".
type Thing struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Size            int    `json:"size,omitempty"`
	Color           string `json:"color,omitempty"`
}

type ThingV2 struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Bigness         int    `json:"bigness,omitempty"`
	Color           string `json:"color,omitempty"`
}

var thingConversion = registry.Conversion[*Thing, *ThingV2]{
	ToStorage: func(v *ThingV2) (*Thing, error) {
		return &Thing{TypeMeta: v.TypeMeta, ObjectMeta: v.ObjectMeta, Size: v.Bigness, Color: v.Color}, nil
	},
	FromStorage: func(s *Thing) (*ThingV2, error) {
		return &ThingV2{TypeMeta: s.TypeMeta, ObjectMeta: s.ObjectMeta, Bigness: s.Size, Color: s.Color}, nil
	},
}

// thingStrategy defaults the color.
type thingStrategy struct {
	registry.DefaultStrategy[*Thing]
}

func (thingStrategy) Default(t *Thing) {
	if t.Color == "" {
		t.Color = "blue"
	}
}

// versionLog is a mutating and validating plugin that records what it
// sees in both versions; its mutation doubles the size.
type versionLog struct {
	mu  sync.Mutex
	log []string
}

func (*versionLog) Handles(admission.Operation) bool { return true }

func (l *versionLog) record(step string, a *admission.Attributes) {
	l.mu.Lock()
	defer l.mu.Unlock()
	entry := fmt.Sprintf("%s %s: stored %T", step, a.Kind.Version, a.Object)
	switch v := a.VersionedObject.(type) {
	case *Thing:
		entry += fmt.Sprintf(", requested %s %T size=%d color=%s", v.APIVersion, v, v.Size, v.Color)
	case *ThingV2:
		entry += fmt.Sprintf(", requested %s %T bigness=%d color=%s", v.APIVersion, v, v.Bigness, v.Color)
	}
	if a.OldObject != nil {
		entry += fmt.Sprintf(", old requested %T", a.VersionedOldObject)
	}
	l.log = append(l.log, entry)
}

func (l *versionLog) Admit(_ context.Context, a *admission.Attributes) error {
	l.record("admit", a)
	a.Object.(*Thing).Size *= 2
	return nil
}

func (l *versionLog) Validate(_ context.Context, a *admission.Attributes) error {
	l.record("validate", a)
	return nil
}

func (l *versionLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	l.log = nil
	return out
}

// TestAdmissionSeesRequestedVersion: admission plugins get the object in
// the storage version and in the version of the request, defaulted before
// mutating admission, and validating plugins see the mutation in both.
func TestAdmissionSeesRequestedVersion(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	things, err := registry.NewStore(registry.Options[*Thing]{
		Resource: meta.GroupResource{Group: group, Resource: "things"}, Kind: "Thing",
		NamespaceScoped: true, StorageVersion: "v1", Strategy: thingStrategy{}, Storage: mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := registry.ServeVersion(things, "v2", thingConversion)
	if err != nil {
		t.Fatal(err)
	}
	plugin := &versionLog{}
	info := server.NewAPIGroupInfo(group).AddVersion("v1", registry.Serve(things)).AddVersion("v2", v2)
	_, hs := serveGroup(t, info, nil, func(c *server.Config) { c.Admission = admission.Chain{plugin} })
	ts := &testServer{Server: hs}

	for _, tc := range []struct {
		name, method, path, body string
		want                     []string
	}{{
		name: "create in v2", method: "POST", path: "/apis/test.example.com/v2/namespaces/ns/things",
		body: `{"apiVersion":"test.example.com/v2","kind":"Thing","metadata":{"name":"a"},"bigness":3}`,
		want: []string{
			"admit v2: stored *endpoints_test.Thing, requested test.example.com/v2 *endpoints_test.ThingV2 bigness=3 color=blue",
			"validate v2: stored *endpoints_test.Thing, requested test.example.com/v2 *endpoints_test.ThingV2 bigness=6 color=blue",
		},
	}, {
		name: "create in the storage version", method: "POST", path: "/apis/test.example.com/v1/namespaces/ns/things",
		body: `{"apiVersion":"test.example.com/v1","kind":"Thing","metadata":{"name":"b"},"size":5}`,
		want: []string{
			"admit v1: stored *endpoints_test.Thing, requested test.example.com/v1 *endpoints_test.Thing size=5 color=blue",
			"validate v1: stored *endpoints_test.Thing, requested test.example.com/v1 *endpoints_test.Thing size=10 color=blue",
		},
	}, {
		name: "merge patch in v2", method: "PATCH", path: "/apis/test.example.com/v2/namespaces/ns/things/a",
		body: `{"bigness":7,"color":null}`,
		want: []string{
			"admit v2: stored *endpoints_test.Thing, requested test.example.com/v2 *endpoints_test.ThingV2 bigness=7 color=blue, old requested *endpoints_test.ThingV2",
			"validate v2: stored *endpoints_test.Thing, requested test.example.com/v2 *endpoints_test.ThingV2 bigness=14 color=blue, old requested *endpoints_test.ThingV2",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ct := ""
			if tc.method == "PATCH" {
				ct = "application/merge-patch+json"
			}
			resp, b := ts.do(t, req{method: tc.method, path: tc.path, body: tc.body, contentType: ct})
			if resp.StatusCode/100 != 2 {
				t.Fatalf("%s: %d %s", tc.method, resp.StatusCode, b)
			}
			if got := plugin.take(); !slices.Equal(got, tc.want) {
				t.Errorf("admission saw\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}
