package rbac

import (
	"sync"

	"github.com/apikit-dev/apikit/authn/serviceaccount"
)

// subjectKey is a binding subject as the authorizer looks it up: a user
// name (service accounts become their user names) or a group name.
type subjectKey struct {
	group bool
	name  string
}

// nsSubjectKey is a subject of the RoleBindings of one namespace.
type nsSubjectKey struct {
	namespace string
	subjectKey
}

// Index is the RBAC policy in memory: every Role, ClusterRole, RoleBinding
// and ClusterRoleBinding, with the bindings indexed by subject, so that a
// decision is a few map lookups and never a storage read. Sync (see Run)
// keeps it equal to storage through watches; it can also be filled
// directly, for tests and programs that keep their policy elsewhere.
//
// Objects put in the Index are kept as given and must not be modified
// afterwards. The zero Index is not usable; use NewIndex.
type Index struct {
	mu                  sync.RWMutex
	roles               map[string]map[string]*Role        // namespace, name
	clusterRoles        map[string]*ClusterRole            // name
	roleBindings        map[string]map[string]*RoleBinding // namespace, name
	clusterRoleBindings map[string]*ClusterRoleBinding     // name
	rbBySubject         map[nsSubjectKey]map[string]*RoleBinding
	crbBySubject        map[subjectKey]map[string]*ClusterRoleBinding

	// synced is closed once every kind has been listed (MarkSynced).
	synced     chan struct{}
	syncOnce   sync.Once
	syncedKind map[string]bool
	// clusterRolesChanged gets a token on every ClusterRole change, for
	// the aggregation controller.
	clusterRolesChanged chan struct{}
}

// NewIndex returns an empty Index that is not synced.
func NewIndex() *Index {
	return &Index{
		roles:               map[string]map[string]*Role{},
		clusterRoles:        map[string]*ClusterRole{},
		roleBindings:        map[string]map[string]*RoleBinding{},
		clusterRoleBindings: map[string]*ClusterRoleBinding{},
		rbBySubject:         map[nsSubjectKey]map[string]*RoleBinding{},
		crbBySubject:        map[subjectKey]map[string]*ClusterRoleBinding{},
		synced:              make(chan struct{}),
		syncedKind:          map[string]bool{},
		clusterRolesChanged: make(chan struct{}, 1),
	}
}

// Synced is closed once the index holds a complete policy: after Run's
// first list of every kind, or MarkSynced.
func (x *Index) Synced() <-chan struct{} { return x.synced }

// HasSynced reports whether Synced is closed.
func (x *Index) HasSynced() bool {
	select {
	case <-x.synced:
		return true
	default:
		return false
	}
}

// MarkSynced declares the index complete, for an index filled by hand.
func (x *Index) MarkSynced() { x.syncOnce.Do(func() { close(x.synced) }) }

// markKindSynced records the first full list of one kind; the index is
// synced when all four have been listed.
func (x *Index) markKindSynced(kind string) {
	x.mu.Lock()
	x.syncedKind[kind] = true
	all := len(x.syncedKind) == 4
	x.mu.Unlock()
	if all {
		x.MarkSynced()
	}
}

func (x *Index) notifyClusterRoles() {
	select {
	case x.clusterRolesChanged <- struct{}{}:
	default:
	}
}

// subjectKeys returns the lookup keys of a binding's subjects; ns is the
// binding's namespace ("" for a ClusterRoleBinding), the default of
// service accounts' namespaces.
func subjectKeys(subjects []Subject, ns string) []subjectKey {
	keys := make([]subjectKey, 0, len(subjects))
	for _, s := range subjects {
		switch s.Kind {
		case UserKind:
			keys = append(keys, subjectKey{name: s.Name})
		case GroupKind:
			keys = append(keys, subjectKey{group: true, name: s.Name})
		case ServiceAccountKind:
			saNS := s.Namespace
			if saNS == "" {
				saNS = ns
			}
			if saNS != "" {
				keys = append(keys, subjectKey{name: serviceaccount.Username(saNS, s.Name)})
			}
		}
	}
	return keys
}

// PutRole adds or replaces a Role.
func (x *Index) PutRole(r *Role) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.putRoleLocked(r)
}

func (x *Index) putRoleLocked(r *Role) {
	ns := x.roles[r.Namespace]
	if ns == nil {
		ns = map[string]*Role{}
		x.roles[r.Namespace] = ns
	}
	ns[r.Name] = r
}

// DeleteRole removes a Role.
func (x *Index) DeleteRole(namespace, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if ns := x.roles[namespace]; ns != nil {
		delete(ns, name)
		if len(ns) == 0 {
			delete(x.roles, namespace)
		}
	}
}

// PutClusterRole adds or replaces a ClusterRole.
func (x *Index) PutClusterRole(r *ClusterRole) {
	x.mu.Lock()
	x.clusterRoles[r.Name] = r
	x.mu.Unlock()
	x.notifyClusterRoles()
}

// DeleteClusterRole removes a ClusterRole.
func (x *Index) DeleteClusterRole(name string) {
	x.mu.Lock()
	delete(x.clusterRoles, name)
	x.mu.Unlock()
	x.notifyClusterRoles()
}

// PutRoleBinding adds or replaces a RoleBinding.
func (x *Index) PutRoleBinding(b *RoleBinding) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.putRoleBindingLocked(b)
}

func (x *Index) putRoleBindingLocked(b *RoleBinding) {
	x.deleteRoleBindingLocked(b.Namespace, b.Name)
	ns := x.roleBindings[b.Namespace]
	if ns == nil {
		ns = map[string]*RoleBinding{}
		x.roleBindings[b.Namespace] = ns
	}
	ns[b.Name] = b
	for _, k := range subjectKeys(b.Subjects, b.Namespace) {
		key := nsSubjectKey{b.Namespace, k}
		m := x.rbBySubject[key]
		if m == nil {
			m = map[string]*RoleBinding{}
			x.rbBySubject[key] = m
		}
		m[b.Name] = b
	}
}

// DeleteRoleBinding removes a RoleBinding.
func (x *Index) DeleteRoleBinding(namespace, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deleteRoleBindingLocked(namespace, name)
}

func (x *Index) deleteRoleBindingLocked(namespace, name string) {
	ns := x.roleBindings[namespace]
	old := ns[name]
	if old == nil {
		return
	}
	delete(ns, name)
	if len(ns) == 0 {
		delete(x.roleBindings, namespace)
	}
	for _, k := range subjectKeys(old.Subjects, namespace) {
		key := nsSubjectKey{namespace, k}
		if m := x.rbBySubject[key]; m != nil {
			delete(m, name)
			if len(m) == 0 {
				delete(x.rbBySubject, key)
			}
		}
	}
}

// PutClusterRoleBinding adds or replaces a ClusterRoleBinding.
func (x *Index) PutClusterRoleBinding(b *ClusterRoleBinding) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.putClusterRoleBindingLocked(b)
}

func (x *Index) putClusterRoleBindingLocked(b *ClusterRoleBinding) {
	x.deleteClusterRoleBindingLocked(b.Name)
	x.clusterRoleBindings[b.Name] = b
	for _, k := range subjectKeys(b.Subjects, "") {
		m := x.crbBySubject[k]
		if m == nil {
			m = map[string]*ClusterRoleBinding{}
			x.crbBySubject[k] = m
		}
		m[b.Name] = b
	}
}

// DeleteClusterRoleBinding removes a ClusterRoleBinding.
func (x *Index) DeleteClusterRoleBinding(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deleteClusterRoleBindingLocked(name)
}

func (x *Index) deleteClusterRoleBindingLocked(name string) {
	old := x.clusterRoleBindings[name]
	if old == nil {
		return
	}
	delete(x.clusterRoleBindings, name)
	for _, k := range subjectKeys(old.Subjects, "") {
		if m := x.crbBySubject[k]; m != nil {
			delete(m, name)
			if len(m) == 0 {
				delete(x.crbBySubject, k)
			}
		}
	}
}

// ClusterRoles returns every ClusterRole (shared: read-only).
func (x *Index) ClusterRoles() []*ClusterRole {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]*ClusterRole, 0, len(x.clusterRoles))
	for _, r := range x.clusterRoles {
		out = append(out, r)
	}
	return out
}

// ClusterRole returns the named ClusterRole (shared: read-only).
func (x *Index) ClusterRole(name string) (*ClusterRole, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	r, ok := x.clusterRoles[name]
	return r, ok
}
