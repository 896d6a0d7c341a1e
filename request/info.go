package request

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// Info is what a request asks of the server.
type Info struct {
	// IsResourceRequest is false for paths outside /api and /apis
	// resource trees (/healthz, /apis discovery, /openapi/v2...).
	IsResourceRequest bool
	Path              string
	// Verb is the Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection for resources; the lowercased HTTP method
	// for other paths.
	Verb        string
	APIPrefix   string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	Parts       []string
	// FieldSelectorName is set when a list or watch selects one object by
	// metadata.name; Name is then set to it as well, as kube-apiserver does,
	// so that authorization can allow a watch on a single named object.
	FieldSelectorName bool
	// Query is the parsed query (nil when there is none), shared by every
	// filter and handler that reads it (Query): read-only.
	Query url.Values
	// rawQuery is the query Query was parsed from.
	rawQuery string
	// err refuses a resource path whose segments no object can have
	// (Err).
	err error
	// partsBuf holds the segments of a path of up to eight (every
	// resource path but a namespaced subresource's deeper ones), so that
	// Parts costs a request no allocation of its own.
	partsBuf [8]string
}

// Err reports why the request's path can be served by no handler: a
// namespace or name segment that is "." or "..", or holds "/" or "%" once
// unescaped (a 400 Status, kube-apiserver's wording from its storage key
// functions), or another segment of a resource path holding "/" or being
// "." or ".." (404). Such a request is refused before authorization, so
// nothing ever judges or serves it under a reading of the path that the
// router's differs from. Nil for every other request.
func (i *Info) Err() error { return i.err }

// IsLongRunning reports whether the request may outlive the request timeout
// (watches and streaming subresources).
func (i *Info) IsLongRunning() bool {
	if i.Verb == "watch" {
		return true
	}
	switch i.Subresource {
	case "proxy", "attach", "exec", "log", "portforward":
		return true
	}
	return false
}

// IsMutating reports whether the verb changes state.
func (i *Info) IsMutating() bool {
	switch i.Verb {
	case "create", "update", "patch", "delete", "deletecollection", "post", "put", "delete_nonresource":
		return true
	}
	return false
}

// Resolver parses request paths. APIPrefixes are the roots of resource
// trees with groups ("apis"); GrouplessPrefixes those without ("api").
type Resolver struct {
	APIPrefixes       []string
	GrouplessPrefixes []string
}

// DefaultResolver parses /api and /apis as Kubernetes does.
var DefaultResolver = &Resolver{APIPrefixes: []string{"apis", "api"}, GrouplessPrefixes: []string{"api"}}

// namespaceSubresources are the subresources of a namespace object; a path
// /namespaces/<ns>/<x> with x among them addresses the namespace itself.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Resolve parses r into an Info. Anything it cannot place in a resource tree
// is a non-resource request; a resource path that no object can be served
// under gets an Info whose Err says why.
func (res *Resolver) Resolve(r *http.Request) *Info {
	return res.resolve(r.Method, r.URL)
}

func (res *Resolver) resolve(method string, u *url.URL) *Info {
	info := &Info{Path: u.Path, Verb: lowerMethod(method), rawQuery: u.RawQuery}
	if u.RawQuery != "" {
		info.Query = u.Query()
	}
	// The path is split as the router (http.ServeMux) splits it: at the
	// slashes of the escaped path, each segment unescaped on its own. A
	// split of the unescaped path would read namespaces/a%2Fb/flunders as
	// namespace "a", resource "b" while the router serves flunders in
	// namespace "a/b".
	parts := splitPath(info.partsBuf[:0], u.EscapedPath())
	if !cleanSegments(parts) {
		// A path with "." or ".." or empty segments names no resource
		// (the router answers it with a redirect to the clean path): it
		// is authorized as the non-resource path it is, never as a
		// namespace or name "..".
		return info
	}
	for i, seg := range parts {
		if strings.IndexByte(seg, '%') < 0 {
			continue
		}
		p, err := url.PathUnescape(seg)
		if err != nil {
			// url.Parse accepted the escapes already; nothing to route.
			return info
		}
		parts[i] = p
	}
	if len(parts) < 3 || !contains(res.APIPrefixes, parts[0]) {
		return info
	}
	info.resolveParts(method, parts, res.GrouplessPrefixes)
	info.err = info.pathError()
	return info
}

// resolveParts fills info from the unescaped segments of a path under an
// API prefix.
func (info *Info) resolveParts(method string, parts, groupless []string) {
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if !contains(groupless, info.APIPrefix) {
		if len(parts) < 3 {
			// /apis/<group>/<version>: discovery, not a resource.
			return
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	if parts[0] == "watch" {
		// The deprecated /watch/ path prefix.
		info.Verb = "watch"
		parts = parts[1:]
		if len(parts) == 0 {
			info.IsResourceRequest = false
			return
		}
	} else {
		switch method {
		case http.MethodPost:
			info.Verb = "create"
		case http.MethodGet, http.MethodHead:
			info.Verb = "get"
		case http.MethodPut:
			info.Verb = "update"
		case http.MethodPatch:
			info.Verb = "patch"
		case http.MethodDelete:
			info.Verb = "delete"
		default:
			info.Verb = ""
		}
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			info.Namespace = parts[1]
			if len(parts) > 2 && !namespaceSubresources[parts[2]] {
				parts = parts[2:]
			}
		}
	}
	info.Parts = parts
	switch {
	case len(parts) >= 3:
		info.Subresource = parts[2]
		fallthrough
	case len(parts) == 2:
		info.Name = parts[1]
		fallthrough
	case len(parts) == 1:
		info.Resource = parts[0]
	}

	if info.Name == "" && info.Verb == "get" {
		q := info.Query
		info.Verb = "list"
		// Read watch as the handlers do (and Kubernetes' query
		// conversion): present and neither "0" nor "false" is true, even
		// "?watch". Disagreeing with the handler would authorize and time
		// out a watch as a list.
		if w, ok := q["watch"]; ok && len(w) > 0 && w[0] != "0" && !strings.EqualFold(w[0], "false") {
			info.Verb = "watch"
		}
		if fs := q.Get("fieldSelector"); fs != "" {
			if sel, err := meta.ParseFieldSelector(fs); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok && len(meta.ValidatePathSegmentName(name, false)) == 0 {
					info.Name = name
					info.FieldSelectorName = true
				}
			}
		}
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}
}

// pathError is Err's value for a resolved path (nil when it is fine).
func (info *Info) pathError() error {
	if !info.IsResourceRequest {
		return nil
	}
	// The fieldSelector's name never came from the path and was checked
	// when it was taken.
	if info.Name != "" && !info.FieldSelectorName {
		if msgs := meta.ValidatePathSegmentName(info.Name, false); len(msgs) > 0 {
			return meta.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", info.Name, strings.Join(msgs, ";")))
		}
	}
	if info.Namespace != "" {
		if msgs := meta.ValidatePathSegmentName(info.Namespace, false); len(msgs) > 0 {
			return meta.NewBadRequest(fmt.Sprintf("Namespace parameter invalid: %q: %s", info.Namespace, strings.Join(msgs, ";")))
		}
	}
	for _, seg := range []string{info.APIGroup, info.APIVersion, info.Resource, info.Subresource} {
		if seg == "." || seg == ".." || strings.Contains(seg, "/") {
			// No route has such a segment: it is served by nothing.
			return meta.NewNotFoundPath()
		}
	}
	return nil
}

// cleanSegments reports whether no segment is empty, "." or "..".
func cleanSegments(parts []string) bool {
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return false
		}
	}
	return true
}

// splitPath appends the segments of p between its slashes to dst, as
// strings.Split of p trimmed of slashes at both ends does.
func splitPath(dst []string, p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	for {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return append(dst, p)
		}
		dst = append(dst, p[:i])
		p = p[i+1:]
	}
}

// lowerMethod is strings.ToLower(method) without an allocation for the
// methods clients send (a request's non-resource verb).
func lowerMethod(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	case http.MethodHead:
		return "head"
	case http.MethodOptions:
		return "options"
	}
	return strings.ToLower(method)
}

type infoKey struct{}

// WithInfo returns a context carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// Query returns r's parsed query: the one its Info parsed when the Info is
// r's (the request-info filter parses each request's query once), else a
// fresh parse; nil when there is none. Read-only.
func Query(r *http.Request) url.Values {
	if r.URL.RawQuery == "" {
		return nil
	}
	if info, ok := InfoFrom(r.Context()); ok && info.rawQuery == r.URL.RawQuery && info.Path == r.URL.Path {
		return info.Query
	}
	return r.URL.Query()
}

// InfoFrom returns the Info a context carries.
func InfoFrom(ctx context.Context) (*Info, bool) {
	i, ok := ctx.Value(infoKey{}).(*Info)
	return i, ok && i != nil
}
