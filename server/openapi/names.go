package openapi

import (
	"reflect"
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// metaPrefix is where Kubernetes keeps the shared meta types; clients such as
// kubectl know ObjectMeta by this name, so apikit's meta types take it.
const metaPrefix = "io.k8s.apimachinery.pkg.apis.meta.v1."

// metaPkgPath is the Go package of apikit's meta types.
var metaPkgPath = reflect.TypeOf(meta.ObjectMeta{}).PkgPath()

// metaRenames maps meta Go type names to the Kubernetes names where they
// differ.
var metaRenames = map[string]string{
	"ManagedFields": "ManagedFieldsEntry",
}

// namer gives Go types their definition names, the way kube-apiserver names
// them: the meta types as io.k8s.apimachinery.pkg.apis.meta.v1.<Name>, a
// served kind as <reversed group>.<version>.<Kind> (as kube-apiserver names
// custom resources, e.g. com.example.wardle.v1beta1.Flunder), the other
// types of a served kind's Go package under the same prefix, and anything
// else by its Go package path with the domain reversed
// (com.github.org.repo.pkg.Type), as kube-openapi does.
//
// A name, once given, stays with its type; a second type that would get the
// same name falls back to its Go path name, so that two types never share
// a definition.
type namer struct {
	kinds     map[reflect.Type]string // served kinds, named up front
	pkgPrefix map[string]string       // Go package path -> "com.example.wardle.v1beta1."
	names     map[reflect.Type]string // memo: every name handed out
	taken     map[string]reflect.Type
}

func newNamer() *namer {
	return &namer{
		kinds:     map[reflect.Type]string{},
		pkgPrefix: map[string]string{},
		names:     map[reflect.Type]string{},
		taken:     map[string]reflect.Type{},
	}
}

// gvPrefix is the definition name prefix of a group-version.
func gvPrefix(gv meta.GroupVersion) string {
	if gv.Group == "" {
		// The core group: where Kubernetes keeps Pod and friends.
		return "io.k8s.api.core." + gv.Version + "."
	}
	return reverseDomain(gv.Group) + "." + gv.Version + "."
}

// addKind names t, the Go type of a served kind. The first group-version a
// type or a package is seen in names it: callers add preferred versions
// first.
func (n *namer) addKind(t reflect.Type, gvk meta.GroupVersionKind) {
	t = deref(t)
	if _, ok := n.kinds[t]; ok {
		return
	}
	prefix := gvPrefix(gvk.GroupVersion())
	n.kinds[t] = prefix + gvk.Kind
	if _, ok := n.pkgPrefix[t.PkgPath()]; !ok && t.PkgPath() != metaPkgPath {
		n.pkgPrefix[t.PkgPath()] = prefix
	}
}

// name is go-restful-openapi's ModelTypeNameHandler: it reports false for
// types the library names itself (unnamed and standard library types).
func (n *namer) name(t reflect.Type) (string, bool) {
	t = deref(t)
	if t.Name() == "" || t.PkgPath() == "" {
		return "", false
	}
	if name, ok := n.names[t]; ok {
		return name, true
	}
	first, _, _ := strings.Cut(t.PkgPath(), "/")
	// A program's own types (package main, as a built example's) are
	// named like any other; only the standard library is the library's.
	if !strings.Contains(first, ".") && t.PkgPath() != "main" {
		// The standard library (time.Time and friends): the library maps
		// these to primitive types by their Go names.
		return "", false
	}
	name := n.preferredName(t)
	if other, ok := n.taken[name]; ok && other != t {
		name = goPathName(t)
	}
	n.names[t] = name
	n.taken[name] = t
	return name, true
}

func (n *namer) preferredName(t reflect.Type) string {
	if t.PkgPath() == metaPkgPath {
		if k8s, ok := metaRenames[t.Name()]; ok {
			return metaPrefix + k8s
		}
		return metaPrefix + sanitizeName(t.Name())
	}
	if name, ok := n.kinds[t]; ok {
		return name
	}
	if prefix, ok := n.pkgPrefix[t.PkgPath()]; ok {
		return prefix + sanitizeName(t.Name())
	}
	return goPathName(t)
}

// goPathName is kube-openapi's friendly name of a Go type: its package path
// with the domain reversed and slashes as dots.
func goPathName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	if strings.Contains(parts[0], ".") {
		parts[0] = reverseDomain(parts[0])
	}
	return strings.Join(parts, ".") + "." + sanitizeName(t.Name())
}

// reverseDomain turns wardle.example.com into com.example.wardle.
func reverseDomain(d string) string {
	parts := strings.Split(d, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".")
}

// sanitizeName keeps generic instantiations (List[pkg.T]) usable as JSON
// pointer tokens and URL fragments.
func sanitizeName(name string) string {
	return strings.NewReplacer("[", "_", "]", "", "/", ".", "*", "", ",", "_", " ", "").Replace(name)
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
