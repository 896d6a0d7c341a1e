package rbac

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// Resources of the RBAC group.
var (
	RolesResource               = meta.GroupResource{Group: GroupName, Resource: "roles"}
	ClusterRolesResource        = meta.GroupResource{Group: GroupName, Resource: "clusterroles"}
	RoleBindingsResource        = meta.GroupResource{Group: GroupName, Resource: "rolebindings"}
	ClusterRoleBindingsResource = meta.GroupResource{Group: GroupName, Resource: "clusterrolebindings"}
)

// Stores keep the RBAC objects in storage, under kube-apiserver's keys
// (/rbac.authorization.k8s.io/roles/<namespace>/<name>...).
type Stores struct {
	Roles               *registry.Store[*Role]
	ClusterRoles        *registry.Store[*ClusterRole]
	RoleBindings        *registry.Store[*RoleBinding]
	ClusterRoleBindings *registry.Store[*ClusterRoleBinding]
}

// NewStores builds the four stores on the storage f hands out.
func NewStores(f storage.Factory) (*Stores, error) {
	st := func(gr meta.GroupResource) (storage.Interface, error) {
		s, err := f.For(gr)
		if err != nil {
			return nil, fmt.Errorf("rbac: storage for %s: %w", gr, err)
		}
		return s, nil
	}
	var s Stores
	var err error
	bindingRole := func(ref RoleRef) any { return ref.Kind + "/" + ref.Name }
	subjects := func(kind string) func([]Subject) any {
		return func(ss []Subject) any {
			var names []string
			for _, s := range ss {
				if s.Kind != kind {
					continue
				}
				if kind == ServiceAccountKind {
					names = append(names, s.Namespace+"/"+s.Name)
				} else {
					names = append(names, s.Name)
				}
			}
			return strings.Join(names, ", ")
		}
	}
	storageOf := func(gr meta.GroupResource) storage.Interface {
		if err != nil {
			return nil
		}
		var s storage.Interface
		s, err = st(gr)
		return s
	}
	roles, clusterRoles := storageOf(RolesResource), storageOf(ClusterRolesResource)
	roleBindings, clusterRoleBindings := storageOf(RoleBindingsResource), storageOf(ClusterRoleBindingsResource)
	if err != nil {
		return nil, err
	}
	if s.Roles, err = registry.NewStore(registry.Options[*Role]{
		Resource: RolesResource, Kind: KindRole, NamespaceScoped: true, StorageVersion: Version, NoGeneration: true, DeleteStatus: true,
		Strategy: roleStrategy{}, Storage: roles, NameValidator: ValidateName,
		AllowCreateOnUpdate: true, AllowUnconditionalUpdate: true,
	}); err != nil {
		return nil, err
	}
	if s.ClusterRoles, err = registry.NewStore(registry.Options[*ClusterRole]{
		Resource: ClusterRolesResource, Kind: KindClusterRole, StorageVersion: Version, NoGeneration: true, DeleteStatus: true,
		Strategy: clusterRoleStrategy{}, Storage: clusterRoles, NameValidator: ValidateName,
		AllowCreateOnUpdate: true, AllowUnconditionalUpdate: true,
	}); err != nil {
		return nil, err
	}
	rbSubjects := func(kind string) func(*RoleBinding) any {
		f := subjects(kind)
		return func(b *RoleBinding) any { return f(b.Subjects) }
	}
	if s.RoleBindings, err = registry.NewStore(registry.Options[*RoleBinding]{
		Resource: RoleBindingsResource, Kind: KindRoleBinding, NamespaceScoped: true, StorageVersion: Version, NoGeneration: true, DeleteStatus: true,
		Strategy: roleBindingStrategy{}, Storage: roleBindings, NameValidator: ValidateName,
		AllowCreateOnUpdate: true, AllowUnconditionalUpdate: true,
		Columns: []registry.Column[*RoleBinding]{
			{Name: "Role", Type: "string", Description: "The role the binding grants.", Value: func(b *RoleBinding) any { return bindingRole(b.RoleRef) }},
			{Name: "Users", Type: "string", Priority: 1, Description: "Users in the binding.", Value: rbSubjects(UserKind)},
			{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the binding.", Value: rbSubjects(GroupKind)},
			{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "Service accounts in the binding.", Value: rbSubjects(ServiceAccountKind)},
		},
	}); err != nil {
		return nil, err
	}
	crbSubjects := func(kind string) func(*ClusterRoleBinding) any {
		f := subjects(kind)
		return func(b *ClusterRoleBinding) any { return f(b.Subjects) }
	}
	if s.ClusterRoleBindings, err = registry.NewStore(registry.Options[*ClusterRoleBinding]{
		Resource: ClusterRoleBindingsResource, Kind: KindClusterRoleBinding, StorageVersion: Version, NoGeneration: true, DeleteStatus: true,
		Strategy: clusterRoleBindingStrategy{}, Storage: clusterRoleBindings, NameValidator: ValidateName,
		AllowCreateOnUpdate: true, AllowUnconditionalUpdate: true,
		Columns: []registry.Column[*ClusterRoleBinding]{
			{Name: "Role", Type: "string", Description: "The role the binding grants.", Value: func(b *ClusterRoleBinding) any { return bindingRole(b.RoleRef) }},
			{Name: "Users", Type: "string", Priority: 1, Description: "Users in the binding.", Value: crbSubjects(UserKind)},
			{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the binding.", Value: crbSubjects(GroupKind)},
			{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "Service accounts in the binding.", Value: crbSubjects(ServiceAccountKind)},
		},
	}); err != nil {
		return nil, err
	}
	return &s, nil
}

// Resources returns the four resources to serve in rbac.authorization.k8s.io/v1.
// Their writes refuse escalation as kube-apiserver's do: a user may create
// or change a Role or ClusterRole only with rules they hold themselves
// (their RBAC rules in its namespace, which rbac resolves), and bind a role
// only if they hold its rules, unless authorizer (the server's whole
// chain) lets them "escalate" on roles, or "bind" that role. Members of
// system:masters may do anything.
func (s *Stores) Resources(authorizer authz.Authorizer, rbac *Authorizer) []registry.Resource {
	g := &guard{authorizer: authorizer, rbac: rbac, stores: s}
	return []registry.Resource{
		&guarded{Resource: registry.Serve(s.Roles), check: g.checkRole},
		&guarded{Resource: registry.Serve(s.ClusterRoles), check: g.checkClusterRole},
		&guarded{Resource: registry.Serve(s.RoleBindings), check: g.checkRoleBinding},
		&guarded{Resource: registry.Serve(s.ClusterRoleBindings), check: g.checkClusterRoleBinding},
	}
}

// guarded is a served RBAC resource whose creates and updates pass check
// first. check gets the new object and the current one (nil on create).
type guarded struct {
	registry.Resource
	check func(ctx context.Context, ns, name string, obj, old meta.Object) error
}

func (g *guarded) Create(ctx context.Context, ns string, obj meta.Object, opts registry.WriteOptions) (registry.Item, error) {
	if err := g.check(ctx, ns, "", obj, nil); err != nil {
		return registry.Item{}, err
	}
	return g.Resource.Create(ctx, ns, obj, opts)
}

func (g *guarded) Update(ctx context.Context, ns, name string, fn registry.ObjectUpdate, opts registry.UpdateOptions) (registry.Item, bool, error) {
	return g.Resource.Update(ctx, ns, name, func(ctx context.Context, cur meta.Object) (meta.Object, error) {
		// fn may change cur in place: compare with a copy taken first.
		var old meta.Object
		if cur != nil && !isNilObject(cur) {
			var err error
			if old, err = g.copyOf(cur); err != nil {
				return nil, err
			}
		}
		next, err := fn(ctx, cur)
		if err != nil {
			return nil, err
		}
		if old != nil {
			gcOnly, err := g.onlyGCFieldsChanged(next, old)
			if err != nil {
				return nil, err
			}
			if gcOnly {
				return next, nil
			}
		}
		if err := g.check(ctx, ns, name, next, old); err != nil {
			return nil, err
		}
		return next, nil
	}, opts)
}

// onlyGCFieldsChanged reports whether next differs from old only in what
// garbage collection writes (ownerReferences, finalizers) or in
// managedFields: the one kind of update kube-apiserver (IsOnlyMutatingGCFields)
// lets through without its escalation checks. Any other change, a label
// included, can grant something (a label can make the aggregation copy a
// role's rules into another), so it is checked.
func (g *guarded) onlyGCFieldsChanged(next, old meta.Object) (bool, error) {
	c, err := g.copyOf(next)
	if err != nil {
		return false, err
	}
	m, o := c.GetObjectMeta(), old.GetObjectMeta()
	m.OwnerReferences, m.Finalizers, m.ManagedFields = o.OwnerReferences, o.Finalizers, o.ManagedFields
	// apiVersion and kind say nothing of what the object grants; a body
	// may carry them where the stored copy does not.
	*c.GetTypeMeta() = *old.GetTypeMeta()
	a, err := json.Marshal(c)
	if err != nil {
		return false, meta.NewInternalError(fmt.Errorf("comparing %T: %w", next, err))
	}
	b, err := json.Marshal(old)
	if err != nil {
		return false, meta.NewInternalError(fmt.Errorf("comparing %T: %w", old, err))
	}
	return bytes.Equal(a, b), nil
}

// copyOf returns a deep copy of obj.
func (g *guarded) copyOf(obj meta.Object) (meta.Object, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("copying %T: %w", obj, err))
	}
	c := g.New()
	if err := json.Unmarshal(b, c); err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("copying %T: %w", obj, err))
	}
	return c, nil
}

// guard holds what the escalation checks ask.
type guard struct {
	authorizer authz.Authorizer
	rbac       *Authorizer
	stores     *Stores
}

// fullAuthority is cluster-admin's rules: what setting an aggregation rule
// takes, since it may gather anything.
var fullAuthority = []PolicyRule{
	{Verbs: []string{VerbAll}, APIGroups: []string{APIGroupAll}, Resources: []string{ResourceAll}},
	{Verbs: []string{VerbAll}, NonResourceURLs: []string{NonResourceAll}},
}

// userFrom returns the request's user, and whether they are privileged
// (system:masters), which the API server's own loopback identity is too.
func userFrom(ctx context.Context) (*authn.User, bool, error) {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil, false, meta.NewForbidden(meta.GroupResource{Group: GroupName}, "", errors.New("no user on the request"))
	}
	return u, slices.Contains(u.Groups, authn.SystemPrivilegedGroup), nil
}

// allowed asks the server's authorizer about one verb on an RBAC resource.
func (g *guard) allowed(ctx context.Context, u *authn.User, verb, resource, ns, name string) bool {
	d, _, _ := g.authorizer.Authorize(ctx, authz.Attributes{User: u, Verb: verb, ResourceRequest: true,
		APIGroup: GroupName, APIVersion: "*", Resource: resource, Namespace: ns, Name: name})
	return d == authz.DecisionAllow
}

// confirmNoEscalation refuses rules the user does not hold in ns.
func (g *guard) confirmNoEscalation(u *authn.User, ns string, rules []PolicyRule) error {
	owner, resolveErr := g.rbac.Rules(u, ns)
	ok, missing := Covers(owner, rules)
	if ok {
		return nil
	}
	var lines []string
	for _, r := range CompactRules(missing) {
		lines = append(lines, CompactString(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", resolveErr)
	}
	return errors.New(msg)
}

// checkRole refuses a Role holding rules the user does not hold in its
// namespace. On update the whole rule set is checked, not only what the
// update added, as kube-apiserver's ConfirmNoEscalation does.
func (g *guard) checkRole(ctx context.Context, ns, name string, obj, old meta.Object) error {
	r := obj.(*Role)
	if name == "" {
		name = r.Name
	}
	u, privileged, err := userFrom(ctx)
	if err != nil || privileged {
		return err
	}
	if g.allowed(ctx, u, "escalate", RolesResource.Resource, ns, requestName(old, name)) {
		return nil
	}
	if err := g.confirmNoEscalation(u, ns, r.Rules); err != nil {
		return meta.NewForbidden(RolesResource, name, err)
	}
	return nil
}

// checkClusterRole refuses a ClusterRole holding rules the user does not
// hold cluster-wide, and one with an aggregation rule before or after the
// write unless the user holds everything: an aggregation rule may gather
// anything, and removing one keeps what it gathered.
func (g *guard) checkClusterRole(ctx context.Context, _, name string, obj, old meta.Object) error {
	r := obj.(*ClusterRole)
	if name == "" {
		name = r.Name
	}
	o, _ := old.(*ClusterRole)
	aggregating := r.AggregationRule != nil || (o != nil && o.AggregationRule != nil)
	u, privileged, err := userFrom(ctx)
	if err != nil || privileged {
		return err
	}
	if g.allowed(ctx, u, "escalate", ClusterRolesResource.Resource, "", requestName(old, name)) {
		return nil
	}
	if err := g.confirmNoEscalation(u, "", r.Rules); err != nil {
		return meta.NewForbidden(ClusterRolesResource, name, err)
	}
	if aggregating {
		if err := g.confirmNoEscalation(u, "", fullAuthority); err != nil {
			return meta.NewForbidden(ClusterRolesResource, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

func (g *guard) checkRoleBinding(ctx context.Context, ns, name string, obj, _ meta.Object) error {
	b := obj.(*RoleBinding)
	if name == "" {
		name = b.Name
	}
	return g.checkBinding(ctx, RoleBindingsResource, ns, name, b.RoleRef)
}

func (g *guard) checkClusterRoleBinding(ctx context.Context, _, name string, obj, _ meta.Object) error {
	b := obj.(*ClusterRoleBinding)
	if name == "" {
		name = b.Name
	}
	return g.checkBinding(ctx, ClusterRoleBindingsResource, "", name, b.RoleRef)
}

// checkBinding lets a user bind a role they may "bind", or whose rules they
// hold in the binding's namespace ("" for a ClusterRoleBinding).
func (g *guard) checkBinding(ctx context.Context, gr meta.GroupResource, ns, name string, ref RoleRef) error {
	u, privileged, err := userFrom(ctx)
	if err != nil || privileged {
		return err
	}
	resource := ""
	switch ref.Kind {
	case KindRole:
		resource = RolesResource.Resource
	case KindClusterRole:
		resource = ClusterRolesResource.Resource
	default:
		return nil // validation refuses it
	}
	if ref.APIGroup == GroupName && g.allowed(ctx, u, "bind", resource, ns, ref.Name) {
		return nil
	}
	rules, err := g.roleRefRules(ctx, ref, ns)
	if err != nil {
		return err
	}
	if err := g.confirmNoEscalation(u, ns, rules); err != nil {
		return meta.NewForbidden(gr, name, err)
	}
	return nil
}

// roleRefRules returns the rules of a binding's role: from the index, or
// from storage when the index has not seen the role yet (a role created
// and bound in quick succession).
func (g *guard) roleRefRules(ctx context.Context, ref RoleRef, ns string) ([]PolicyRule, error) {
	if rules, err := g.rbac.RoleRefRules(ref, ns); err == nil {
		return rules, nil
	}
	if ref.Kind == KindRole {
		r, _, err := g.stores.Roles.Get(ctx, ns, ref.Name, meta.GetOptions{})
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	}
	r, _, err := g.stores.ClusterRoles.Get(ctx, "", ref.Name, meta.GetOptions{})
	if err != nil {
		return nil, err
	}
	return r.Rules, nil
}

// requestName is the name the request addressed: none on create, as in
// kube-apiserver's escalate check, which reads the request's path.
func requestName(old meta.Object, name string) string {
	if old == nil || isNilObject(old) {
		return ""
	}
	return name
}

func isNilObject(o meta.Object) bool {
	switch v := o.(type) {
	case *Role:
		return v == nil
	case *ClusterRole:
		return v == nil
	case *RoleBinding:
		return v == nil
	case *ClusterRoleBinding:
		return v == nil
	}
	return false
}

func aggregationEqual(a, b *AggregationRule) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.ClusterRoleSelectors) != len(b.ClusterRoleSelectors) {
		return false
	}
	for i := range a.ClusterRoleSelectors {
		sa, errA := a.ClusterRoleSelectors[i].AsSelector()
		sb, errB := b.ClusterRoleSelectors[i].AsSelector()
		if errA != nil || errB != nil || sa.String() != sb.String() {
			return false
		}
	}
	return true
}
