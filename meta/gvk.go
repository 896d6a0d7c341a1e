package meta

import (
	"fmt"
	"strings"
)

// GroupVersion names an API group at one version. The core group is "".
type GroupVersion struct {
	Group   string
	Version string
}

// String returns "group/version", or just "version" for the core group.
func (gv GroupVersion) String() string {
	if gv.Group == "" {
		return gv.Version
	}
	return gv.Group + "/" + gv.Version
}

// WithKind pairs gv with a kind.
func (gv GroupVersion) WithKind(kind string) GroupVersionKind {
	return GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}
}

// WithResource pairs gv with a resource.
func (gv GroupVersion) WithResource(resource string) GroupVersionResource {
	return GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: resource}
}

// ParseGroupVersion parses "group/version" or "version" (the core group).
func ParseGroupVersion(s string) (GroupVersion, error) {
	if s == "" || s == "/" {
		return GroupVersion{}, nil
	}
	switch strings.Count(s, "/") {
	case 0:
		return GroupVersion{Version: s}, nil
	case 1:
		i := strings.IndexByte(s, '/')
		return GroupVersion{Group: s[:i], Version: s[i+1:]}, nil
	default:
		return GroupVersion{}, fmt.Errorf("unexpected GroupVersion string: %v", s)
	}
}

// GroupVersionKind names a kind in a group-version.
type GroupVersionKind struct {
	Group   string
	Version string
	Kind    string
}

// GroupVersion drops the kind.
func (gvk GroupVersionKind) GroupVersion() GroupVersion {
	return GroupVersion{Group: gvk.Group, Version: gvk.Version}
}

// GroupKind drops the version.
func (gvk GroupVersionKind) GroupKind() GroupKind {
	return GroupKind{Group: gvk.Group, Kind: gvk.Kind}
}

// GroupVersionResource names a resource in a group-version.
type GroupVersionResource struct {
	Group    string
	Version  string
	Resource string
}

// GroupVersion drops the resource.
func (gvr GroupVersionResource) GroupVersion() GroupVersion {
	return GroupVersion{Group: gvr.Group, Version: gvr.Version}
}

// GroupResource drops the version.
func (gvr GroupVersionResource) GroupResource() GroupResource {
	return GroupResource{Group: gvr.Group, Resource: gvr.Resource}
}

// GroupResource names a resource across versions; it is what error messages
// quote ("flunders.wardle.example.com").
type GroupResource struct {
	Group    string
	Resource string
}

// String returns "resource.group", or "resource" for the core group.
func (gr GroupResource) String() string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// GroupKind names a kind across versions.
type GroupKind struct {
	Group string
	Kind  string
}

// String returns "Kind.group", or "Kind" for the core group.
func (gk GroupKind) String() string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}
