package server

import "github.com/apikit-dev/apikit/registry"

// groupWatchers are the functions WatchAPIGroups registered with one
// server.
type groupWatchers struct {
	next  uint64
	funcs map[uint64]func()
}

// WatchAPIGroups implements DelegationTarget: f is called after every
// change of what APIGroups returns, here (DynamicGroupsChanged) or in a
// delegate, until stop is called.
func (s *GenericServer) WatchAPIGroups(f func()) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers.funcs == nil {
		s.watchers.funcs = map[uint64]func(){}
	}
	id := s.watchers.next
	s.watchers.next++
	s.watchers.funcs[id] = f
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watchers.funcs, id)
	}
}

// DynamicGroupsChanged tells those watching the server's groups
// (WatchAPIGroups, on this server and on every server in front of it)
// that what the function given to SetDynamicGroups returns has changed:
// the extensions server calls it whenever it serves a new state of the
// CRDs, so that the garbage collector and the namespace controller of a
// server further out follow custom resources as they come and go.
func (s *GenericServer) DynamicGroupsChanged() {
	s.dynamicSynced.Store(true)
	s.notifyAPIGroups()
}

// APIGroupsSynced implements DelegationTarget: this server's dynamic
// groups, if it has any, have been told once (DynamicGroupsChanged), and
// its delegates' are synced.
func (s *GenericServer) APIGroupsSynced() bool {
	if s.dynamicGroups.Load() != nil && !s.dynamicSynced.Load() {
		return false
	}
	return s.delegate.APIGroupsSynced()
}

// notifyAPIGroups calls the watchers of this server's groups.
func (s *GenericServer) notifyAPIGroups() {
	s.mu.Lock()
	funcs := make([]func(), 0, len(s.watchers.funcs))
	for _, f := range s.watchers.funcs {
		funcs = append(funcs, f)
	}
	s.mu.Unlock()
	// Called without the lock: a watcher may read APIGroups.
	for _, f := range funcs {
		f()
	}
}

// Resources lists the resources of groups (as APIGroups returns them):
// group by group, each group's versions in priority order, so that the
// first resource of a group and kind (or resource) is its preferred
// version's. Controllers over every served resource take the first of
// each.
func Resources(groups []*APIGroupInfo) []registry.Resource {
	var out []registry.Resource
	for _, g := range groups {
		for _, v := range g.Versions {
			out = append(out, v.Resources...)
		}
	}
	return out
}

// ResourceSource is a source of resources served outside a chain, behind
// its outermost server: the resources of an aggregator's remote
// APIServices (aggregator.Aggregator), served by servers in other
// processes. The controllers over every served resource (package gc,
// core/nsdeletion) follow them beside APIGroups, as
// kube-controller-manager's discovery finds aggregated groups.
type ResourceSource interface {
	// RemoteResources lists the resources reachable now, each group's
	// preferred version first; the error names those left out (a
	// group-version whose server is unavailable), what it returned still
	// being usable.
	RemoteResources() ([]registry.Resource, error)
	// WatchRemoteResources has f called after every change of what
	// RemoteResources returns, until stop is called; f must not block.
	WatchRemoteResources(f func()) (stop func())
}
