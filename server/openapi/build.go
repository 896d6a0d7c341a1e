package openapi

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"

	restfulspec "github.com/emicklei/go-restful-openapi/v2"
	restful "github.com/emicklei/go-restful/v3"
	"github.com/go-openapi/spec"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/server/endpoints"
)

// Config is what Build documents.
type Config struct {
	// Title and Version head the documents (info.title, info.version).
	Title, Version string
	// WebServices are the routes to document: those of a server and of its
	// delegates, one WebService per group-version.
	WebServices []*restful.WebService
	// Resources are the served resources, preferred versions first. They
	// tell which Go type is which kind, so that definitions get Kubernetes
	// names and group-version-kind extensions.
	Resources []registry.Resource
	// Schemas holds the schemas of the served types; the definitions are
	// rendered from it. Types the routes name that it lacks (those of a
	// delegate, the meta types) are added to it. Nil starts an empty set.
	Schemas *schema.Set
	// Definitions replace the definitions of the same names once the
	// others are complete: a custom resource's, written from its CRD's
	// schema, in place of what its Go type (one for every CRD) gives.
	Definitions spec.Definitions
}

// Extension keys kubectl and client-go read.
const (
	extGVK    = "x-kubernetes-group-version-kind"
	extAction = "x-kubernetes-action"
)

// gvkExt is one group-version-kind as the extensions write it. Operations
// carry one, definitions a list; kubectl compares all three keys, so group
// is written even when empty.
type gvkExt struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

func toExt(gvk meta.GroupVersionKind) gvkExt {
	return gvkExt{Group: gvk.Group, Kind: gvk.Kind, Version: gvk.Version}
}

// builder holds what one Build call learns about the served kinds.
type builder struct {
	cfg   Config
	names *namer
	// kindOf finds the kind a Go type is served as in a group-version,
	// typeOf the Go type of a kind (the first resource's, if several).
	kindOf map[meta.GroupVersion]map[reflect.Type]string
	typeOf map[meta.GroupVersionKind]reflect.Type
	// gvks lists every group-version-kind a Go type is served as.
	gvks map[reflect.Type][]meta.GroupVersionKind
	// gvs are the served group-versions in order, for DeleteOptions.
	gvs []meta.GroupVersion
	sw  *spec.Swagger
}

func newBuilder(cfg Config) (*builder, error) {
	b := &builder{
		cfg:    cfg,
		names:  newNamer(),
		kindOf: map[meta.GroupVersion]map[reflect.Type]string{},
		typeOf: map[meta.GroupVersionKind]reflect.Type{},
		gvks:   map[reflect.Type][]meta.GroupVersionKind{},
	}
	for _, res := range cfg.Resources {
		info := res.Info()
		obj := res.New()
		if obj == nil {
			return nil, fmt.Errorf("openapi: resource %s of %s has no Go type (New returned nil)", info.Resource, info.GroupVersion)
		}
		t := deref(reflect.TypeOf(obj))
		gvk := info.GroupVersion.WithKind(info.Kind)
		b.names.addKind(t, gvk)
		if b.kindOf[info.GroupVersion] == nil {
			b.kindOf[info.GroupVersion] = map[reflect.Type]string{}
			b.gvs = append(b.gvs, info.GroupVersion)
		}
		b.kindOf[info.GroupVersion][t] = info.Kind
		if _, ok := b.typeOf[gvk]; !ok {
			b.typeOf[gvk] = t
		}
		if !slices.Contains(b.gvks[t], gvk) {
			b.gvks[t] = append(b.gvks[t], gvk)
		}
	}
	return b, nil
}

// buildV2 makes the Swagger 2.0 document: go-restful-openapi derives paths
// and definitions from the routes and Go types; the rest of this file adds
// what Kubernetes clients need and reflection cannot know.
func (b *builder) buildV2() (*spec.Swagger, error) {
	rc := restfulspec.Config{
		WebServices:          b.cfg.WebServices,
		ModelTypeNameHandler: b.names.name,
	}
	sw := restfulspec.BuildSwagger(rc)
	b.sw = sw
	// go-restful-openapi documents the paths; the definitions are rendered
	// from the schema model, the one description of the types' shapes.
	// The meta types no route samples (Status, DeleteOptions, the
	// discovery list) come from a WebService made only to describe them.
	set := b.cfg.Schemas
	if set == nil {
		set = schema.NewSet()
	}
	if err := addRouteModels(set, append(slices.Clone(b.cfg.WebServices), metaModels())); err != nil {
		return nil, err
	}
	defs, err := b.renderDefinitions(set)
	if err != nil {
		return nil, err
	}
	sw.Definitions = defs
	sw.Info = &spec.Info{InfoProps: spec.InfoProps{Title: b.cfg.Title, Version: b.cfg.Version}}

	for _, ws := range b.cfg.WebServices {
		gv, isGV := groupVersionOf(ws.RootPath())
		for _, r := range ws.Routes() {
			if err := b.completeOperation(ws, r, gv, isGV); err != nil {
				return nil, err
			}
		}
	}
	b.completeDefinitions()
	for name, def := range b.cfg.Definitions {
		sw.Definitions[name] = def
	}
	return sw, nil
}

// metaModels is a WebService that is never served: its one route names the
// meta types operations refer to, so that go-restful-openapi describes them
// from their Go types like every other definition.
func metaModels() *restful.WebService {
	ws := new(restful.WebService).Path("/")
	ws.Route(ws.POST("/").To(func(*restful.Request, *restful.Response) {}).
		Reads(meta.DeleteOptions{}).Writes(meta.Status{}).
		Returns(http.StatusOK, "OK", meta.APIResourceList{}))
	return ws
}

// groupVersionOf reads the group-version of a WebService root:
// /apis/<group>/<version>, or /api/<version> for the core group.
func groupVersionOf(root string) (meta.GroupVersion, bool) {
	parts := strings.Split(strings.Trim(root, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "apis" && parts[1] != "" && parts[2] != "":
		return meta.GroupVersion{Group: parts[1], Version: parts[2]}, true
	case len(parts) == 2 && parts[0] == "api" && parts[1] != "":
		return meta.GroupVersion{Version: parts[1]}, true
	}
	return meta.GroupVersion{}, false
}

// pathKey is the OpenAPI path of a route: go-restful-openapi's, which drops
// {name:regexp} patterns and empty segments, except that a trailing slash
// stays, as kube-apiserver documents /apis/<group>/<version>/.
func pathKey(routePath string) string {
	var b strings.Builder
	for _, seg := range strings.Split(routePath, "/") {
		if seg == "" {
			continue
		}
		if strings.HasPrefix(seg, "{") {
			if name, _, ok := strings.Cut(seg, ":"); ok && !strings.Contains(name, "}") {
				seg = name + "}"
			}
		}
		b.WriteString("/")
		b.WriteString(seg)
	}
	if b.Len() == 0 || strings.HasSuffix(routePath, "/") {
		b.WriteString("/")
	}
	return b.String()
}

// libraryPathKey is the path go-restful-openapi filed a route under.
func libraryPathKey(routePath string) string {
	k := pathKey(routePath)
	if len(k) > 1 {
		k = strings.TrimSuffix(k, "/")
	}
	return k
}

// operation returns the operation of method in item, creating nothing.
func operation(item *spec.PathItem, method string) *spec.Operation {
	switch method {
	case http.MethodGet:
		return item.Get
	case http.MethodPut:
		return item.Put
	case http.MethodPost:
		return item.Post
	case http.MethodDelete:
		return item.Delete
	case http.MethodPatch:
		return item.Patch
	case http.MethodHead:
		return item.Head
	case http.MethodOptions:
		return item.Options
	}
	return nil
}

// action is x-kubernetes-action: the verb of a route as kube-apiserver's
// OpenAPI names it.
func action(method string, list bool) string {
	switch method {
	case http.MethodGet:
		if list {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if list {
			return "deletecollection"
		}
		return "delete"
	}
	return strings.ToLower(method)
}

// routeKind is the kind a route serves: from its metadata, else from its
// sample's Go type in the route's group-version.
func (b *builder) routeKind(gv meta.GroupVersion, r restful.Route) (string, bool) {
	if k, ok := r.Metadata[endpoints.MetadataKind].(string); ok && k != "" {
		return k, true
	}
	for _, sample := range []any{r.WriteSample, r.ReadSample} {
		if sample == nil {
			continue
		}
		if k, ok := b.kindOf[gv][deref(reflect.TypeOf(sample))]; ok {
			return k, true
		}
	}
	return "", false
}

// completeOperation adds to a route's operation what kubectl reads: the
// action and group-version-kind extensions, the List type of collection
// responses, the patch and delete bodies, the tag, and kube-apiserver's
// operation id for the group-version's discovery route.
func (b *builder) completeOperation(ws *restful.WebService, r restful.Route, gv meta.GroupVersion, isGV bool) error {
	key, want := libraryPathKey(r.Path), pathKey(r.Path)
	item, ok := b.sw.Paths.Paths[want]
	if !ok {
		item, ok = b.sw.Paths.Paths[key]
	}
	if !ok {
		return fmt.Errorf("openapi: route %s %s is missing from the built document", r.Method, r.Path)
	}
	op := operation(&item, r.Method)
	if op == nil {
		return fmt.Errorf("openapi: operation %s %s is missing from the built document", r.Method, r.Path)
	}
	if tag, ok := r.Metadata[endpoints.MetadataTag].(string); ok && tag != "" && len(op.Tags) == 0 {
		op.Tags = []string{tag}
	}
	if !isGV {
		b.store(key, want, item)
		return nil
	}
	op.RespondsWith(http.StatusUnauthorized, &spec.Response{ResponseProps: spec.ResponseProps{Description: "Unauthorized"}})
	list, _ := r.Metadata[endpoints.MetadataList].(bool)
	kind, hasKind := b.routeKind(gv, r)
	switch {
	case hasKind:
		gvk := gv.WithKind(kind)
		op.AddExtension(extAction, action(r.Method, list))
		op.AddExtension(extGVK, toExt(gvk))
		if list {
			listName, err := b.addListDefinition(gvk)
			if err != nil {
				return err
			}
			op.RespondsWith(http.StatusOK, &spec.Response{ResponseProps: spec.ResponseProps{
				Description: "OK", Schema: spec.RefSchema("#/definitions/" + listName)}})
		}
		switch {
		case r.Method == http.MethodPatch && !hasBody(op):
			b.addPatchDefinition()
			body := spec.BodyParam("body", spec.RefSchema("#/definitions/"+metaPrefix+"Patch")).AsRequired()
			op.Parameters = append([]spec.Parameter{*body}, op.Parameters...)
		case r.Method == http.MethodDelete && !hasBody(op):
			// The body is optional: kubectl sends DeleteOptions in it,
			// curl users put them in the query.
			body := spec.BodyParam("body", spec.RefSchema("#/definitions/"+metaPrefix+"DeleteOptions"))
			op.Parameters = append([]spec.Parameter{*body}, op.Parameters...)
		}
	case r.Method == http.MethodGet && strings.TrimSuffix(r.Path, "/") == strings.TrimSuffix(ws.RootPath(), "/"):
		// The group-version's discovery document.
		op.ID = "get" + operationIdent(gv) + "APIResources"
		if r.WriteSample == nil {
			op.RespondsWith(http.StatusOK, &spec.Response{ResponseProps: spec.ResponseProps{
				Description: "OK", Schema: spec.RefSchema("#/definitions/" + metaPrefix + "APIResourceList")}})
		}
	}
	b.store(key, want, item)
	return nil
}

// store puts item back (PathItem is a value) under want, the path
// kube-apiserver would document, which keeps a route's trailing slash that
// go-restful-openapi drops (key).
func (b *builder) store(key, want string, item spec.PathItem) {
	if want != key {
		delete(b.sw.Paths.Paths, key)
	}
	b.sw.Paths.Paths[want] = item
}

func hasBody(op *spec.Operation) bool {
	for _, p := range op.Parameters {
		if p.In == "body" {
			return true
		}
	}
	return false
}

// operationIdent is the group-version part of kube-apiserver's operation
// ids: wardle.example.com/v1beta1 -> WardleExampleComV1beta1.
func operationIdent(gv meta.GroupVersion) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(gv.Group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	if gv.Group == "" {
		b.WriteString("Core")
	}
	if gv.Version != "" {
		b.WriteString(strings.ToUpper(gv.Version[:1]) + gv.Version[1:])
	}
	return b.String()
}

// addListDefinition synthesizes <Kind>List, which has no Go type: a list
// response is assembled from stored items by the REST handlers.
func (b *builder) addListDefinition(gvk meta.GroupVersionKind) (string, error) {
	name := gvPrefix(gvk.GroupVersion()) + gvk.Kind + "List"
	if _, done := b.sw.Definitions[name]; done {
		return name, nil
	}
	t, ok := b.typeOf[gvk]
	if !ok {
		return "", fmt.Errorf("openapi: no Go type is served as %s, the kind of a list route", gvk)
	}
	item, ok := b.names.name(t)
	if !ok {
		return "", fmt.Errorf("openapi: %s (the Go type of %s) has no definition name", t, gvk)
	}
	resource := strings.ToLower(gvk.Kind) + "s"
	for _, res := range b.cfg.Resources {
		if info := res.Info(); info.GroupVersion == gvk.GroupVersion() && info.Kind == gvk.Kind {
			resource = info.Resource
			break
		}
	}
	items := spec.ArrayProperty(spec.RefSchema("#/definitions/" + item))
	items.Description = "List of " + resource + ". More info: " + conventions
	apiVersion, kind := spec.StringProperty(), spec.StringProperty()
	apiVersion.Description, kind.Description = descAPIVersion, descKind
	md := spec.RefSchema("#/definitions/" + metaPrefix + "ListMeta")
	md.Description = descListMeta
	def := spec.Schema{}
	def.Typed("object", "")
	def.Description = gvk.Kind + "List is a list of " + gvk.Kind
	def.Required = []string{"items"}
	def.Properties = spec.SchemaProperties{"apiVersion": *apiVersion, "items": *items, "kind": *kind, "metadata": *md}
	if d, ok := reflect.Zero(deref(t)).Interface().(schema.ListDocumented); ok {
		listDocs(&def, d.ListSwaggerDoc())
	}
	def.AddExtension(extGVK, []gvkExt{toExt(gvk.GroupVersion().WithKind(gvk.Kind + "List"))})
	b.sw.Definitions[name] = def
	return name, nil
}

// listDocs puts a kind's own words for its list into def, the list's
// definition, over the template's.
func listDocs(def *spec.Schema, docs map[string]string) {
	if d, ok := docs[""]; ok {
		def.Description = d
	}
	for _, field := range []string{"items", "metadata"} {
		if d, ok := docs[field]; ok {
			p := def.Properties[field]
			p.Description = d
			def.Properties[field] = p
		}
	}
}

func (b *builder) addPatchDefinition() {
	name := metaPrefix + "Patch"
	if _, done := b.sw.Definitions[name]; done {
		return
	}
	def := spec.Schema{}
	def.Typed("object", "")
	def.Description = descPatch
	b.sw.Definitions[name] = def
}

var (
	typeMetaType   = reflect.TypeOf(meta.TypeMeta{})
	objectMetaType = reflect.TypeOf(meta.ObjectMeta{})
)

// completeDefinitions fixes the meta definitions, documents the fields
// every object shares, marks structs as objects, and tags each served kind
// with its group-version-kinds.
func (b *builder) completeDefinitions() {
	defs := b.sw.Definitions
	fixMetaDefinitions(defs)
	// Types that embed TypeMeta (and ObjectMeta as metadata) get
	// Kubernetes' words for apiVersion, kind and metadata.
	for t, name := range b.names.names {
		def, ok := defs[name]
		if !ok || t.Kind() != reflect.Struct {
			continue
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.Anonymous {
				continue
			}
			switch f.Type {
			case typeMetaType:
				describe(&def, "apiVersion", descAPIVersion)
				describe(&def, "kind", descKind)
			case objectMetaType:
				describe(&def, "metadata", descObjectMeta)
			}
		}
		if gvks := b.gvks[t]; len(gvks) > 0 {
			ext := make([]gvkExt, len(gvks))
			for i, g := range gvks {
				ext[i] = toExt(g)
			}
			def.AddExtension(extGVK, ext)
		}
		defs[name] = def
	}
	if def, ok := defs[metaPrefix+"Status"]; ok {
		def.AddExtension(extGVK, []gvkExt{{Kind: "Status", Version: "v1"}})
		defs[metaPrefix+"Status"] = def
	}
	if def, ok := defs[metaPrefix+"DeleteOptions"]; ok {
		// Clients send DeleteOptions with the apiVersion of the resource
		// they delete, as kube-apiserver documents.
		ext := []gvkExt{{Kind: "DeleteOptions", Version: "v1"}}
		for _, gv := range b.gvs {
			ext = append(ext, toExt(gv.WithKind("DeleteOptions")))
		}
		def.AddExtension(extGVK, ext)
		defs[metaPrefix+"DeleteOptions"] = def
	}
	for name, def := range defs {
		// go-restful-openapi leaves a struct's type unset; Kubernetes
		// writes object, and kubectl explain shows it.
		if len(def.Type) == 0 && def.Ref.String() == "" && len(def.AllOf) == 0 {
			def.Typed("object", "")
			defs[name] = def
		}
	}
}

func describe(def *spec.Schema, field, text string) {
	if p, ok := def.Properties[field]; ok && p.Description == "" {
		p.Description = text
		def.Properties[field] = p
	}
}

// checkRefs reports references to definitions that do not exist; a
// document with one would fail every client that resolves it.
func checkRefs(sw *spec.Swagger) error {
	var missing []string
	seen := map[string]bool{}
	visit := func(ref string) {
		name, ok := strings.CutPrefix(ref, "#/definitions/")
		if !ok || seen[ref] {
			return
		}
		seen[ref] = true
		if _, ok := sw.Definitions[name]; !ok {
			missing = append(missing, name)
		}
	}
	var walk func(s *spec.Schema)
	walk = func(s *spec.Schema) {
		if s == nil {
			return
		}
		visit(s.Ref.String())
		for _, p := range s.Properties {
			walk(&p)
		}
		if s.Items != nil {
			walk(s.Items.Schema)
			for i := range s.Items.Schemas {
				walk(&s.Items.Schemas[i])
			}
		}
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema)
		}
		for i := range s.AllOf {
			walk(&s.AllOf[i])
		}
	}
	for _, def := range sw.Definitions {
		walk(&def)
	}
	for _, item := range sw.Paths.Paths {
		for _, op := range []*spec.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch, item.Head, item.Options} {
			if op == nil {
				continue
			}
			for _, p := range op.Parameters {
				walk(p.Schema)
			}
			if op.Responses != nil {
				for _, resp := range op.Responses.StatusCodeResponses {
					walk(resp.Schema)
				}
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return errors.New("openapi: undefined definitions referenced: " + strings.Join(missing, ", "))
	}
	return nil
}
