package server

import (
	"mime"
	"net/http"
	"strings"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server/respond"
)

// aggregatedDiscoveryMediaType is the Content-Type of an aggregated
// discovery response; client-go decides by it that it got one.
const aggregatedDiscoveryMediaType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated reports whether Accept prefers aggregated discovery
// (apidiscovery.k8s.io v2 or v2beta1) over the legacy documents.
func wantsAggregated(accept string) (version string, ok bool) {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if params["as"] == "APIGroupDiscoveryList" && params["g"] == "apidiscovery.k8s.io" && (mt == "application/json" || mt == "*/*") {
			if v := params["v"]; v == "v2" || v == "v2beta1" {
				return v, true
			}
			continue
		}
		if mt == "application/json" || mt == "*/*" || mt == "application/*" {
			return "", false
		}
	}
	return "", false
}

func writeAggregated(w http.ResponseWriter, r *http.Request, version string, list *meta.APIGroupDiscoveryList) {
	list.TypeMeta = meta.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/" + version}
	if list.Items == nil {
		list.Items = []meta.APIGroupDiscovery{}
	}
	body, err := encodeJSON(list)
	if err != nil {
		respond.Error(w, r, meta.NewInternalError(err))
		return
	}
	ct := aggregatedDiscoveryMediaType
	if version != "v2" {
		ct = strings.Replace(ct, "v=v2", "v="+version, 1)
	}
	w.Header().Set("Vary", "Accept")
	respond.Body(w, r, http.StatusOK, ct, body)
}

// DiscoveryGroups lists the API groups /apis serves, in the order clients
// are to prefer them, in either form: the legacy APIGroupList's entries or
// aggregated discovery's (apidiscovery.k8s.io). Both may change while the
// server runs.
type DiscoveryGroups interface {
	APIGroups() []meta.APIGroup
	AggregatedGroups() []meta.APIGroupDiscovery
}

// SetDiscoveryGroups makes d the source of /apis in place of the groups
// installed in the chain; the server still negotiates the form and writes
// it. An aggregator does: its /apis lists the groups of its APIServices,
// those of remote servers too, ordered by their priorities. Every other
// discovery path (/api, /apis/<group>, /apis/<group>/<version>) stays with
// the server that serves the group.
func (s *GenericServer) SetDiscoveryGroups(d DiscoveryGroups) {
	s.discoveryGroups.Store(&d)
}

// serveAPIs answers /apis with every group of the chain, or those of the
// DiscoveryGroups set.
func (s *GenericServer) serveAPIs(w http.ResponseWriter, r *http.Request) {
	if d := s.discoveryGroups.Load(); d != nil {
		if v, ok := wantsAggregated(r.Header.Get("Accept")); ok {
			writeAggregated(w, r, v, &meta.APIGroupDiscoveryList{Items: (*d).AggregatedGroups()})
			return
		}
		out := meta.APIGroupList{TypeMeta: meta.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: (*d).APIGroups()}
		if out.Groups == nil {
			out.Groups = []meta.APIGroup{}
		}
		w.Header().Set("Vary", "Accept")
		respond.Object(w, r, http.StatusOK, out)
		return
	}
	var groups []*APIGroupInfo
	for _, g := range s.APIGroups() {
		if g.Name != "" { // the core group is /api's
			groups = append(groups, g)
		}
	}
	if v, ok := wantsAggregated(r.Header.Get("Accept")); ok {
		list := &meta.APIGroupDiscoveryList{}
		for _, g := range groups {
			list.Items = append(list.Items, aggregatedGroup(g))
		}
		writeAggregated(w, r, v, list)
		return
	}
	out := meta.APIGroupList{TypeMeta: meta.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []meta.APIGroup{}}
	for _, g := range groups {
		ag := apiGroupFor(g)
		ag.TypeMeta = meta.TypeMeta{}
		out.Groups = append(out.Groups, *ag)
	}
	w.Header().Set("Vary", "Accept")
	respond.Object(w, r, http.StatusOK, out)
}

// serveAPI answers /api with the core group of the chain, as kube-apiserver:
// the APIVersions document, or the group alone in aggregated discovery. A
// chain without a core group passes the request on (404 at its end).
func (s *GenericServer) serveAPI(w http.ResponseWriter, r *http.Request) {
	var core *APIGroupInfo
	for _, g := range s.APIGroups() {
		if g.Name == "" {
			core = g
			break
		}
	}
	if core == nil {
		s.delegate.UnprotectedHandler().ServeHTTP(w, r)
		return
	}
	if v, ok := wantsAggregated(r.Header.Get("Accept")); ok {
		writeAggregated(w, r, v, &meta.APIGroupDiscoveryList{Items: []meta.APIGroupDiscovery{aggregatedGroup(core)}})
		return
	}
	out := meta.APIVersions{TypeMeta: meta.TypeMeta{Kind: "APIVersions"},
		// kube-apiserver names the address the client reached it by.
		ServerAddressByClientCIDRs: []meta.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: s.serverAddress(r)}}}
	for _, v := range core.Versions {
		out.Versions = append(out.Versions, v.Version)
	}
	w.Header().Set("Vary", "Accept")
	respond.Object(w, r, http.StatusOK, out)
}

// serverAddress is the host:port a client reaches the server by: the
// configured external address, else the request's Host.
func (s *GenericServer) serverAddress(r *http.Request) string {
	if s.config.ExternalAddress != "" {
		return s.config.ExternalAddress
	}
	return r.Host
}

// aggregatedGroup is one group in aggregated discovery.
func aggregatedGroup(g *APIGroupInfo) meta.APIGroupDiscovery {
	out := meta.APIGroupDiscovery{ObjectMeta: meta.ObjectMeta{Name: g.Name}}
	for _, v := range g.Versions {
		vd := meta.APIVersionDiscovery{Version: v.Version, Freshness: meta.DiscoveryFresh}
		for _, res := range v.Resources {
			info := res.Info()
			gvk := &meta.GroupVersionKindJSON{Group: g.Name, Version: v.Version, Kind: info.Kind}
			rd := meta.APIResourceDiscovery{
				Resource: info.Resource, ResponseKind: gvk, Scope: meta.ScopeCluster,
				SingularResource: info.SingularName, Verbs: info.Verbs,
				ShortNames: info.ShortNames, Categories: info.Categories,
			}
			if info.NamespaceScoped {
				rd.Scope = meta.ScopeNamespace
			}
			for _, sub := range v.subresources {
				if sub.resource != info.Resource {
					continue
				}
				kind := gvk
				if sub.kind != "" {
					kind = &meta.GroupVersionKindJSON{Group: g.Name, Version: v.Version, Kind: sub.kind}
				}
				if sub.kindGV != nil {
					kind = &meta.GroupVersionKindJSON{Group: sub.kindGV.Group, Version: sub.kindGV.Version, Kind: kind.Kind}
				}
				rd.Subresources = append(rd.Subresources, meta.APISubresourceDiscovery{
					Subresource: sub.name, ResponseKind: kind, Verbs: sub.verbs})
			}
			vd.Resources = append(vd.Resources, rd)
		}
		out.Versions = append(out.Versions, vd)
	}
	return out
}
