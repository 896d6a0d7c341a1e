package aggregator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/apikit-dev/apikit/meta"
)

// gvEntry is one group-version of the aggregator's discovery.
type gvEntry struct {
	gv                               meta.GroupVersion
	groupPriority, versionPriority   int32
	name                             string // the APIService's
	remote, available, hasAPIService bool
}

// entries are the group-versions /apis lists: every APIService's, and
// those the chain serves that have none yet (before the
// kube-apiserver-autoregistration hook ran), with the priorities
// autoregistration would give them.
func (a *Aggregator) entries() []gvEntry {
	a.mu.RLock()
	out := make([]gvEntry, 0, len(a.services))
	seen := make(map[meta.GroupVersion]bool, len(a.services))
	for _, s := range a.services {
		gv := s.GroupVersion()
		seen[gv] = true
		out = append(out, gvEntry{gv: gv, groupPriority: s.Spec.GroupPriorityMinimum, versionPriority: s.Spec.VersionPriority,
			name: s.Name, remote: s.Spec.Service != nil, available: s.IsAvailable(), hasAPIService: true})
	}
	a.mu.RUnlock()
	for _, spec := range localSpecs(a.GenericServer.APIGroups(), nil) {
		gv := spec.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gvEntry{gv: gv, groupPriority: spec.GroupPriorityMinimum, versionPriority: spec.VersionPriority,
				name: APIServiceName(gv), available: true})
		}
	}
	return out
}

// groupEntries is one group's entries, versions in priority order.
type groupEntries struct {
	name     string
	priority int32
	versions []gvEntry
}

// sortedGroups orders entries as kube-aggregator does: groups by their
// highest groupPriorityMinimum, then by name; versions by
// versionPriority, then kube-like versions (v2 > v1 > v1beta2 > v1alpha1)
// before others, which go in lexical order.
func sortedGroups(entries []gvEntry) []groupEntries {
	byName := map[string]*groupEntries{}
	var groups []*groupEntries
	for _, e := range entries {
		if e.gv.Group == "" {
			continue // the legacy core group is /api's
		}
		g := byName[e.gv.Group]
		if g == nil {
			g = &groupEntries{name: e.gv.Group}
			byName[e.gv.Group] = g
			groups = append(groups, g)
		}
		g.versions = append(g.versions, e)
		g.priority = max(g.priority, e.groupPriority)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].priority != groups[j].priority {
			return groups[i].priority > groups[j].priority
		}
		return groups[i].name < groups[j].name
	})
	out := make([]groupEntries, 0, len(groups))
	for _, g := range groups {
		sort.Slice(g.versions, func(i, j int) bool {
			vi, vj := g.versions[i], g.versions[j]
			if vi.versionPriority != vj.versionPriority {
				return vi.versionPriority > vj.versionPriority
			}
			return compareVersions(vi.gv.Version, vj.gv.Version) > 0
		})
		out = append(out, *g)
	}
	return out
}

var kubeVersion = regexp.MustCompile(`^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$`)

// compareVersions is kube's CompareKubeAwareVersionStrings: positive when
// a is to be preferred over b.
func compareVersions(a, b string) int {
	ma, mb := kubeVersion.FindStringSubmatch(a), kubeVersion.FindStringSubmatch(b)
	switch {
	case ma == nil && mb == nil:
		return -strings.Compare(a, b)
	case ma == nil:
		return -1
	case mb == nil:
		return 1
	}
	stability := map[string]int{"": 3, "beta": 2, "alpha": 1}
	if sa, sb := stability[ma[2]], stability[mb[2]]; sa != sb {
		// GA before beta before alpha, whatever the major version.
		return sa - sb
	}
	na, _ := strconv.Atoi(ma[1])
	nb, _ := strconv.Atoi(mb[1])
	if na != nb {
		return na - nb
	}
	pa, _ := strconv.Atoi(ma[3])
	pb, _ := strconv.Atoi(mb[3])
	return pa - pb
}

// discoveryGroups is the aggregator's /apis (server.DiscoveryGroups).
type discoveryGroups struct{ a *Aggregator }

// APIGroups lists every group, remote ones whether available or not, as
// kube-aggregator does: a client then learns of a group it cannot reach
// (503 from its version's discovery) instead of missing it silently.
func (d discoveryGroups) APIGroups() []meta.APIGroup {
	groups := sortedGroups(d.a.entries())
	out := make([]meta.APIGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, apiGroup(g))
	}
	return out
}

func apiGroup(g groupEntries) meta.APIGroup {
	ag := meta.APIGroup{Name: g.name}
	for _, v := range g.versions {
		ag.Versions = append(ag.Versions, meta.GroupVersionForDiscovery{GroupVersion: v.gv.String(), Version: v.gv.Version})
	}
	ag.PreferredVersion = ag.Versions[0]
	return ag
}

// AggregatedGroups lists every group-version whose discovery document the
// aggregator has: local ones, and remote ones fetched by the availability
// controller, Stale while their backend is unavailable.
func (d discoveryGroups) AggregatedGroups() []meta.APIGroupDiscovery {
	a := d.a
	var out []meta.APIGroupDiscovery
	for _, g := range sortedGroups(a.entries()) {
		gd := meta.APIGroupDiscovery{ObjectMeta: meta.ObjectMeta{Name: g.name}}
		for _, v := range g.versions {
			var list *meta.APIResourceList
			fresh := meta.DiscoveryFresh
			if v.remote {
				a.mu.RLock()
				if doc := a.docs[v.name]; doc != nil {
					list = doc.list
				}
				a.mu.RUnlock()
				if !v.available {
					fresh = meta.DiscoveryStale
				}
			} else {
				list = a.localResourceList(v.gv)
			}
			if list == nil {
				continue
			}
			vd := versionDiscovery(v.gv, list)
			vd.Freshness = fresh
			gd.Versions = append(gd.Versions, vd)
		}
		if len(gd.Versions) > 0 {
			out = append(out, gd)
		}
	}
	return out
}

// remoteGroup is the group document (/apis/<group>) of a group with at
// least one remote version; ok is false for groups served locally only.
func (a *Aggregator) remoteGroup(group string) (meta.APIGroup, bool) {
	var mine []gvEntry
	remote := false
	for _, e := range a.entries() {
		if e.gv.Group == group {
			mine = append(mine, e)
			remote = remote || e.remote
		}
	}
	if !remote {
		return meta.APIGroup{}, false
	}
	return apiGroup(sortedGroups(mine)[0]), true
}

// versionDiscovery converts a group-version's discovery document to its
// aggregated form: "<resource>/<subresource>" entries become subresources
// of their resource, and kinds get the group-version.
func versionDiscovery(gv meta.GroupVersion, list *meta.APIResourceList) meta.APIVersionDiscovery {
	vd := meta.APIVersionDiscovery{Version: gv.Version}
	kind := func(r meta.APIResource) *meta.GroupVersionKindJSON {
		k := &meta.GroupVersionKindJSON{Group: gv.Group, Version: gv.Version, Kind: r.Kind}
		if r.Group != "" {
			k.Group = r.Group
		}
		if r.Version != "" {
			k.Version = r.Version
		}
		return k
	}
	index := map[string]int{}
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		rd := meta.APIResourceDiscovery{Resource: r.Name, ResponseKind: kind(r), Scope: meta.ScopeCluster,
			SingularResource: r.SingularName, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories}
		if r.Namespaced {
			rd.Scope = meta.ScopeNamespace
		}
		if rd.Verbs == nil {
			rd.Verbs = []string{}
		}
		index[r.Name] = len(vd.Resources)
		vd.Resources = append(vd.Resources, rd)
	}
	for _, r := range list.APIResources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		if !ok {
			continue
		}
		i, found := index[parent]
		if !found {
			continue // a subresource of a resource not listed: kube drops it too
		}
		verbs := r.Verbs
		if verbs == nil {
			verbs = []string{}
		}
		vd.Resources[i].Subresources = append(vd.Resources[i].Subresources,
			meta.APISubresourceDiscovery{Subresource: sub, ResponseKind: kind(r), Verbs: verbs})
	}
	return vd
}

// localResourceList is the discovery document of a group-version the
// chain serves, read from its handler in-process (as kube-aggregator reads
// its delegates') and kept, unless its group is dynamic (a CRD group,
// whose resources come and go): the routes of the others do not change
// once the chain runs.
func (a *Aggregator) localResourceList(gv meta.GroupVersion) *meta.APIResourceList {
	a.mu.RLock()
	list := a.localRL[gv]
	a.mu.RUnlock()
	if list != nil {
		return list
	}
	req, err := http.NewRequest(http.MethodGet, "/apis/"+gv.Group+"/"+gv.Version, nil)
	if err != nil {
		return nil
	}
	req.Header.Set("Accept", "application/json")
	rec := &recorder{header: http.Header{}}
	a.self.ServeHTTP(rec, req)
	if rec.code != http.StatusOK {
		return nil
	}
	list = &meta.APIResourceList{}
	if err := json.Unmarshal(rec.body.Bytes(), list); err != nil || list.GroupVersion != gv.String() {
		return nil
	}
	if a.dynamicGroup(gv.Group) {
		return list
	}
	a.mu.Lock()
	a.localRL[gv] = list
	a.mu.Unlock()
	return list
}

// dynamicGroup reports whether the chain serves group as a dynamic group
// (server.APIGroupInfo.Dynamic) now.
func (a *Aggregator) dynamicGroup(group string) bool {
	for _, g := range a.GenericServer.APIGroups() {
		if g.Name == group && g.Dynamic() {
			return true
		}
	}
	return false
}

// recorder is the ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
