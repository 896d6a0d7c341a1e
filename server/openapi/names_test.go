package openapi

import (
	"reflect"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

type localKind struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            localSpec `json:"spec"`
}

type localSpec struct{}

type otherLocal struct{}

func TestNamer(t *testing.T) {
	n := newNamer()
	n.addKind(reflect.TypeOf(&localKind{}), meta.GroupVersionKind{Group: "wardle.example.com", Version: "v1", Kind: "Thing"})
	// A second group-version of the same type does not rename it.
	n.addKind(reflect.TypeOf(localKind{}), meta.GroupVersionKind{Group: "wardle.example.com", Version: "v2", Kind: "Thing"})
	pkg := goPathName(reflect.TypeOf(otherLocal{}))
	pkg = pkg[:len(pkg)-len("otherLocal")]

	tests := []struct {
		name string
		t    reflect.Type
		want string
		ok   bool
	}{
		{"served kind takes its kind name", reflect.TypeOf(localKind{}), "com.example.wardle.v1.Thing", true},
		{"pointers are their element", reflect.TypeOf(&localKind{}), "com.example.wardle.v1.Thing", true},
		{"package mates share the kind's prefix", reflect.TypeOf(localSpec{}), "com.example.wardle.v1.localSpec", true},
		{"meta types take Kubernetes names", reflect.TypeOf(meta.ObjectMeta{}), metaPrefix + "ObjectMeta", true},
		{"meta renames", reflect.TypeOf(meta.ManagedFields{}), metaPrefix + "ManagedFieldsEntry", true},
		{"standard library is the library's", reflect.TypeOf(meta.Time{}.Time), "", false},
		{"unnamed types are the library's", reflect.TypeOf([]string{}), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := n.name(tt.t)
			if got != tt.want || ok != tt.ok {
				t.Errorf("name(%v) = %q, %v; want %q, %v", tt.t, got, ok, tt.want, tt.ok)
			}
		})
	}
	if pkg != "com.github.apikit-dev.apikit.server.openapi." {
		t.Errorf("Go path prefix = %q, want com.github.apikit-dev.apikit.server.openapi.", pkg)
	}
}

func TestNamerConflictFallsBackToGoPath(t *testing.T) {
	n := newNamer()
	gvk := meta.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
	n.addKind(reflect.TypeOf(localKind{}), gvk)
	// otherLocal is in the same package, so it would be
	// com.example.v1.otherLocal; claim that name for another type first.
	n.taken["com.example.v1.otherLocal"] = reflect.TypeOf(localSpec{})
	got, _ := n.name(reflect.TypeOf(otherLocal{}))
	if want := goPathName(reflect.TypeOf(otherLocal{})); got != want {
		t.Errorf("conflicting name = %q, want the Go path name %q", got, want)
	}
	// And the answer is stable.
	if again, _ := n.name(reflect.TypeOf(otherLocal{})); again != got {
		t.Errorf("second name = %q, want %q", again, got)
	}
}

func TestGVPrefix(t *testing.T) {
	for gv, want := range map[meta.GroupVersion]string{
		{Group: "wardle.example.com", Version: "v1beta1"}: "com.example.wardle.v1beta1.",
		{Group: "apps", Version: "v1"}:                    "apps.v1.",
		{Version: "v1"}:                                   "io.k8s.api.core.v1.",
	} {
		if got := gvPrefix(gv); got != want {
			t.Errorf("gvPrefix(%v) = %q, want %q", gv, got, want)
		}
	}
}

func TestPathKey(t *testing.T) {
	for in, want := range map[string]string{
		"/apis/g/v/":                       "/apis/g/v/",
		"/apis/g/v/things":                 "/apis/g/v/things",
		"/apis/g/v/things/{name:[a-z]+}":   "/apis/g/v/things/{name}",
		"/apis/g//v":                       "/apis/g/v",
		"/":                                "/",
		"/apis/g/v/namespaces/{namespace}": "/apis/g/v/namespaces/{namespace}",
	} {
		if got := pathKey(in); got != want {
			t.Errorf("pathKey(%q) = %q, want %q", in, got, want)
		}
	}
	if got := libraryPathKey("/apis/g/v/"); got != "/apis/g/v" {
		t.Errorf("libraryPathKey drops the trailing slash as go-restful-openapi does; got %q", got)
	}
}

func TestOperationIdent(t *testing.T) {
	for gv, want := range map[meta.GroupVersion]string{
		{Group: "wardle.example.com", Version: "v1beta1"}: "WardleExampleComV1beta1",
		{Group: "flow-control.example", Version: "v1"}:    "FlowControlExampleV1",
		{Version: "v1"}: "CoreV1",
	} {
		if got := operationIdent(gv); got != want {
			t.Errorf("operationIdent(%v) = %q, want %q", gv, got, want)
		}
	}
}
