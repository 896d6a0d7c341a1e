package server

import (
	"slices"
	"strings"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/endpoints"
)

// subresource is a route shape /[namespaces/{namespace}/]<resource>/{name}/<sub>
// of a group-version's WebService, gathered from its routes: the status
// subresource the resources install, and the routes callers add. Discovery
// lists them and the chain's long-running decision reads them, so the
// WebService stays the one table of what a group-version serves.
type subresource struct {
	resource, name string
	// kind is the route's MetadataKind, empty when the parent's kind;
	// kindGV the group-version of that kind when it is another group's
	// (MetadataKindGroupVersion: a scale subresource's autoscaling/v1).
	kind        string
	kindGV      *meta.GroupVersion
	verbs       []string
	longRunning bool
}

// methodVerbs are the Kubernetes verbs of a subresource's HTTP methods.
var methodVerbs = map[string]string{
	"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create", "DELETE": "delete",
}

// subresourcesOf reads the subresource routes of ws, in route order, each
// with its verbs sorted.
func subresourcesOf(ws *restful.WebService) []subresource {
	var out []subresource
	for _, rt := range ws.Routes() {
		rest := strings.TrimPrefix(rt.Path, ws.RootPath()+"/")
		parts := strings.Split(rest, "/")
		if len(parts) > 2 && parts[0] == "namespaces" && parts[1] == "{namespace}" {
			parts = parts[2:]
		}
		if len(parts) != 3 || parts[1] != "{name}" || strings.HasPrefix(parts[2], "{") {
			continue
		}
		verb, ok := methodVerbs[rt.Method]
		if !ok {
			continue
		}
		long, _ := rt.Metadata[endpoints.MetadataLongRunning].(bool)
		kind, _ := rt.Metadata[endpoints.MetadataKind].(string)
		var kindGV *meta.GroupVersion
		if gv, ok := rt.Metadata[endpoints.MetadataKindGroupVersion].(meta.GroupVersion); ok {
			kindGV = &gv
		}
		i := slices.IndexFunc(out, func(s subresource) bool { return s.resource == parts[0] && s.name == parts[2] })
		if i < 0 {
			out = append(out, subresource{resource: parts[0], name: parts[2], kind: kind, kindGV: kindGV})
			i = len(out) - 1
		}
		s := &out[i]
		if !slices.Contains(s.verbs, verb) {
			s.verbs = append(s.verbs, verb)
			slices.Sort(s.verbs)
		}
		s.longRunning = s.longRunning || long
		if s.kind == "" {
			s.kind = kind
		}
	}
	return out
}

// DescribeRoutes sets the subresources discovery lists for v from the
// routes of services, as InstallAPIGroup does for the WebServices it builds. A
// server that serves a group-version through a handler of its own, never
// installed (the extensions server's custom resources), describes its
// routes so that discovery lists their status and scale subresources.
func (v *APIVersionInfo) DescribeRoutes(services ...*restful.WebService) {
	v.subresources = nil
	for _, ws := range services {
		v.subresources = append(v.subresources, subresourcesOf(ws)...)
	}
}

// routeLongRunning reports whether info addresses a subresource route of
// this server, or of a server behind it, marked endpoints.MetadataLongRunning.
func (s *GenericServer) routeLongRunning(info *request.Info) bool {
	if info.Subresource == "" || !info.IsResourceRequest {
		return false
	}
	s.mu.Lock()
	groups := s.groups
	s.mu.Unlock()
	for _, g := range groups {
		if g.Name != info.APIGroup {
			continue
		}
		for _, v := range g.Versions {
			if v.Version != info.APIVersion {
				continue
			}
			for _, sub := range v.subresources {
				if sub.resource == info.Resource && sub.name == info.Subresource {
					return sub.longRunning
				}
			}
		}
	}
	if d, ok := s.delegate.(interface{ routeLongRunning(*request.Info) bool }); ok {
		return d.routeLongRunning(info)
	}
	return false
}
