package endpoints

import (
	"net/http"
	"slices"
	"strings"

	restful "github.com/emicklei/go-restful/v3"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/request"
)

// Media types routes declare; the handlers negotiate the exact form.
var (
	objectMediaTypes = []string{"application/json", "application/yaml"}
	// Strategic merge patch is advertised: kubectl apply then computes
	// one from the x-kubernetes-patch-* extensions the schema model
	// publishes, as it does against kube-apiserver's own types.
	patchMediaTypes = []string{jsonPatchType, mergePatchType, strategicPatchType, applyPatchType}
	readMediaTypes  = []string{"application/json", "application/yaml", "application/json;stream=watch"}
)

// OperationID builds kube-apiserver style operation ids, e.g.
// listWardleExampleComV1beta1NamespacedFlunder.
func OperationID(verb string, gv meta.GroupVersion, namespaced bool, kind, suffix string) string {
	var b strings.Builder
	b.WriteString(verb)
	for _, part := range strings.FieldsFunc(gv.Group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	if gv.Group == "" {
		b.WriteString("Core")
	}
	b.WriteString(strings.ToUpper(gv.Version[:1]) + gv.Version[1:])
	if namespaced {
		b.WriteString("Namespaced")
	}
	b.WriteString(kind)
	b.WriteString(suffix)
	return b.String()
}

// Install adds the routes of s's resource to ws: the collection and object
// paths (under namespaces/{namespace} for namespaced resources, plus the
// all-namespaces collection), and the status subresource when there is one.
func Install(ws *restful.WebService, s *Scope) {
	s.init()
	info := s.info
	gv := info.GroupVersion
	kind := info.Kind
	sample := s.Resource.New()

	nsParam := ws.PathParameter("namespace", "object name and auth scope, such as for teams and projects").DataType("string")
	nameParam := ws.PathParameter("name", "name of the "+kind).DataType("string")

	prefix := "/" + info.Resource
	if info.NamespaceScoped {
		prefix = "/namespaces/{namespace}/" + info.Resource
	}
	ns := func(r *http.Request) string {
		if info.NamespaceScoped {
			return pathSegment(r, "namespace")
		}
		return ""
	}
	withNS := func(rb *restful.RouteBuilder) *restful.RouteBuilder {
		if info.NamespaceScoped {
			rb.Param(nsParam)
		}
		return rb
	}
	id := func(verb, suffix string) string { return OperationID(verb, gv, info.NamespaceScoped, kind, suffix) }
	tag := strings.ReplaceAll(gv.Group, ".", "") + "_" + gv.Version
	if gv.Group == "" {
		tag = "core_" + gv.Version
	}

	// Every route names its kind: resources that share one Go type (the
	// custom resources of a group) cannot be told apart by their samples,
	// and kubectl finds a kind's operations by it.
	to := func(rb *restful.RouteBuilder, h http.HandlerFunc) *restful.RouteBuilder {
		return To(rb, h).Metadata(MetadataKind, kind)
	}
	// route installs a route only for a verb the resource serves.
	route := func(verb string, rb *restful.RouteBuilder) {
		if info.Serves(verb) || (verb == "list" && info.Serves("watch")) {
			ws.Route(rb)
		}
	}

	// Collection.
	route("list", addListParams(withNS(to(ws.GET(prefix), func(w http.ResponseWriter, r *http.Request) {
		s.List(w, r, ns(r))
	}).Operation(id("list", "")).Doc("list or watch objects of kind "+kind).
		Produces(readMediaTypes...).Metadata(MetadataKind, kind).Metadata(MetadataList, true).
		Returns(http.StatusOK, "OK", nil).Metadata(MetadataTag, tag))))

	// Creates and updates may come in protobuf to resources that read it.
	writeTypes := objectMediaTypes
	if _, ok := s.Resource.(registry.ProtobufDecoder); ok {
		writeTypes = append(slices.Clone(objectMediaTypes), protobufType)
	}
	route("create", addWriteParams(withNS(to(ws.POST(prefix), func(w http.ResponseWriter, r *http.Request) {
		s.Create(w, r, ns(r))
	}).Operation(id("create", "")).Doc("create a "+kind).
		Consumes(writeTypes...).Produces(objectMediaTypes...).
		Reads(sample).Writes(sample).
		Returns(http.StatusOK, "OK", sample).Returns(http.StatusCreated, "Created", sample).
		Returns(http.StatusAccepted, "Accepted", sample).Metadata(MetadataTag, tag))))

	route("deletecollection", addListParams(withNS(to(ws.DELETE(prefix), func(w http.ResponseWriter, r *http.Request) {
		s.DeleteCollection(w, r, ns(r))
	}).Operation(id("deletecollection", "")).Doc("delete collection of "+kind).
		Produces(objectMediaTypes...).Metadata(MetadataKind, kind).Metadata(MetadataList, true).
		Param(dryRunParam).
		Returns(http.StatusOK, "OK", nil).Metadata(MetadataTag, tag))))

	if info.NamespaceScoped {
		route("list", addListParams(to(ws.GET("/"+info.Resource), func(w http.ResponseWriter, r *http.Request) {
			s.List(w, r, "")
		}).Operation(OperationID("list", gv, false, kind, "ForAllNamespaces")).
			Doc("list or watch objects of kind "+kind+" in all namespaces").
			Produces(readMediaTypes...).Metadata(MetadataKind, kind).Metadata(MetadataList, true).
			Returns(http.StatusOK, "OK", nil).Metadata(MetadataTag, tag)))
	}

	// Object.
	objPath := prefix + "/{name}"
	route("get", withNS(to(ws.GET(objPath), func(w http.ResponseWriter, r *http.Request) {
		s.Get(w, r, ns(r), pathSegment(r, "name"))
	}).Operation(id("read", "")).Doc("read the specified "+kind).Param(nameParam).
		Param(rvParam).
		Produces(objectMediaTypes...).Writes(sample).Returns(http.StatusOK, "OK", sample).Metadata(MetadataTag, tag)))

	route("update", addWriteParams(withNS(to(ws.PUT(objPath), func(w http.ResponseWriter, r *http.Request) {
		s.Update(w, r, ns(r), pathSegment(r, "name"), "")
	}).Operation(id("replace", "")).Doc("replace the specified "+kind).Param(nameParam).
		Consumes(writeTypes...).Produces(objectMediaTypes...).Reads(sample).Writes(sample).
		Returns(http.StatusOK, "OK", sample).Returns(http.StatusCreated, "Created", sample).Metadata(MetadataTag, tag))))

	route("patch", addPatchParams(withNS(to(ws.PATCH(objPath), func(w http.ResponseWriter, r *http.Request) {
		s.Patch(w, r, ns(r), pathSegment(r, "name"), "")
	}).Operation(id("patch", "")).Doc("partially update the specified "+kind).Param(nameParam).
		Consumes(patchMediaTypes...).Produces(objectMediaTypes...).Writes(sample).
		Returns(http.StatusOK, "OK", sample).Returns(http.StatusCreated, "Created", sample).Metadata(MetadataTag, tag))))

	route("delete", withNS(to(ws.DELETE(objPath), func(w http.ResponseWriter, r *http.Request) {
		s.Delete(w, r, ns(r), pathSegment(r, "name"))
	}).Operation(id("delete", "")).Doc("delete a "+kind).Param(nameParam).
		Consumes(objectMediaTypes...).Produces(objectMediaTypes...).
		Param(dryRunParam).Param(gracePeriodParam).Param(propagationParam).
		Writes(sample).Returns(http.StatusOK, "OK", sample).Returns(http.StatusAccepted, "Accepted", sample).Metadata(MetadataTag, tag)))

	if !info.StatusSubresource {
		return
	}
	statusPath := objPath + "/status"
	route("get", withNS(to(ws.GET(statusPath), func(w http.ResponseWriter, r *http.Request) {
		s.Get(w, r, ns(r), pathSegment(r, "name"))
	}).Operation(id("read", "Status")).Doc("read status of the specified "+kind).Param(nameParam).
		Produces(objectMediaTypes...).Writes(sample).Returns(http.StatusOK, "OK", sample).Metadata(MetadataTag, tag)))
	route("update", addWriteParams(withNS(to(ws.PUT(statusPath), func(w http.ResponseWriter, r *http.Request) {
		s.Update(w, r, ns(r), pathSegment(r, "name"), "status")
	}).Operation(id("replace", "Status")).Doc("replace status of the specified "+kind).Param(nameParam).
		Consumes(objectMediaTypes...).Produces(objectMediaTypes...).Reads(sample).Writes(sample).
		Returns(http.StatusOK, "OK", sample).Returns(http.StatusCreated, "Created", sample).Metadata(MetadataTag, tag))))
	route("patch", addPatchParams(withNS(to(ws.PATCH(statusPath), func(w http.ResponseWriter, r *http.Request) {
		s.Patch(w, r, ns(r), pathSegment(r, "name"), "status")
	}).Operation(id("patch", "Status")).Doc("partially update status of the specified "+kind).Param(nameParam).
		Consumes(patchMediaTypes...).Produces(objectMediaTypes...).Writes(sample).
		Returns(http.StatusOK, "OK", sample).Returns(http.StatusCreated, "Created", sample).Metadata(MetadataTag, tag))))
}

// To gives a route its handler, an http.Handler that reads the path's
// wildcards with Request.PathValue. The handler is kept once, in the route's
// metadata (MetadataHandler), where the server's router finds it: the
// route's WebService stays the one table of routes, documentation and
// handlers. The route's go-restful function is an adapter to that same
// handler, for a restful.Container serving the WebService directly (it
// costs that path no lookup of the route's metadata).
//
// Callers adding routes of their own to a group-version (see
// server.APIVersionInfo.Routes) give them their handlers with To.
func To(rb *restful.RouteBuilder, h http.Handler) *restful.RouteBuilder {
	return rb.To(func(r *restful.Request, w *restful.Response) {
		for k, v := range r.PathParameters() {
			r.Request.SetPathValue(k, v)
		}
		h.ServeHTTP(w, r.Request)
	}).Metadata(MetadataHandler, h)
}

// pathSegment returns the namespace or name a request addresses. It is read
// from the request's request.Info when the request-info filter made one: the
// one parse of the path that authorization, audit and flow control read, so
// a handler cannot serve an object other than the one they judged. Without
// an Info (a bare restful.Container in tests), the router's wildcard.
func pathSegment(r *http.Request, wildcard string) string {
	if ri, ok := request.InfoFrom(r.Context()); ok && ri.IsResourceRequest {
		if wildcard == "namespace" {
			return ri.Namespace
		}
		return ri.Name
	}
	return r.PathValue(wildcard)
}

// Route metadata keys: what the OpenAPI builder (server/openapi) cannot
// learn from a route's samples.
const (
	// MetadataKind is the kind a route serves, set where no sample names it
	// (collections: their List type has no Go type).
	MetadataKind = "apikit.kind"
	// MetadataList marks routes that answer with the kind's List.
	MetadataList = "apikit.list"
	// MetadataTag is the route's OpenAPI tag, e.g. wardleexamplecom_v1beta1.
	MetadataTag = "apikit.tag"
	// MetadataKindGroupVersion is the meta.GroupVersion of the route's
	// MetadataKind when that kind is another group's, as a scale
	// subresource answers autoscaling/v1 Scale: discovery names it.
	MetadataKindGroupVersion = "apikit.kindGroupVersion"
	// MetadataHandler is the route's http.Handler, which reads the path's
	// wildcards with Request.PathValue: what the server dispatches to. Set
	// it with To.
	MetadataHandler = "apikit.handler"
	// MetadataLongRunning marks a route whose requests may outlive the
	// request timeout and hold no flow-control seat while they run
	// (streams, upgrades), as kube-apiserver treats watch, exec and log.
	MetadataLongRunning = "apikit.longRunning"
)

// The query parameters of the routes' documentation. They are made once
// and shared by every route that takes them: go-restful keeps a route's
// parameters as pointers and only reads them (OpenAPI), and a server
// installs dozens of resources with up to ten parameters per route (~0.14
// MB of an idle server's heap when each route had its own).
var (
	dryRunParam = restful.QueryParameter("dryRun", "When present, indicates that modifications should not be persisted. The only valid value is All.").DataType("string")
	rvParam     = restful.QueryParameter("resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served from.").DataType("string")
	listParams  = []*restful.Parameter{
		restful.QueryParameter("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type \"BOOKMARK\".").DataType("boolean"),
		restful.QueryParameter("continue", "The continue option should be set when retrieving more results from the server.").DataType("string"),
		restful.QueryParameter("fieldSelector", "A selector to restrict the list of returned objects by their fields. Defaults to everything.").DataType("string"),
		restful.QueryParameter("labelSelector", "A selector to restrict the list of returned objects by their labels. Defaults to everything.").DataType("string"),
		restful.QueryParameter("limit", "limit is a maximum number of responses to return for a list call.").DataType("integer"),
		rvParam,
		restful.QueryParameter("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is applied to list calls.").DataType("string"),
		restful.QueryParameter("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`; the watch stream then begins with synthetic events for the current state.").DataType("boolean"),
		restful.QueryParameter("timeoutSeconds", "Timeout for the list/watch call.").DataType("integer"),
		restful.QueryParameter("watch", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.").DataType("boolean"),
	}
	writeParams = []*restful.Parameter{
		dryRunParam,
		restful.QueryParameter("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes.").DataType("string"),
		restful.QueryParameter("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request containing unknown fields: Ignore, Warn (the default) or Strict.").DataType("string"),
	}
	forceParam       = restful.QueryParameter("force", "Force is going to \"force\" Apply requests. It must be unset for non-apply patch requests.").DataType("boolean")
	gracePeriodParam = restful.QueryParameter("gracePeriodSeconds", "The duration in seconds before the object should be deleted.").DataType("integer")
	propagationParam = restful.QueryParameter("propagationPolicy", "Whether and how garbage collection will be performed: Orphan, Background or Foreground.").DataType("string")
)

func addListParams(rb *restful.RouteBuilder) *restful.RouteBuilder {
	for _, p := range listParams {
		rb.Param(p)
	}
	return rb
}

func addWriteParams(rb *restful.RouteBuilder) *restful.RouteBuilder {
	for _, p := range writeParams {
		rb.Param(p)
	}
	return rb
}

func addPatchParams(rb *restful.RouteBuilder) *restful.RouteBuilder {
	return addWriteParams(rb).Param(forceParam)
}
