package rbac

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/internal/workgroup"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Labels of the default aggregated ClusterRoles: a ClusterRole carrying
// one of them (with value "true") adds its rules to admin, edit or view.
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Policy is a set of ClusterRoles and ClusterRoleBindings a server keeps in
// place: Reconcile creates what is missing and adds what was removed, at
// every start.
type Policy struct {
	ClusterRoles        []ClusterRole
	ClusterRoleBindings []ClusterRoleBinding
}

// Rule builds a PolicyRule on resources of one API group.
func Rule(group string, resources []string, verbs ...string) PolicyRule {
	return PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

// NonResourceRule builds a PolicyRule on non-resource URLs.
func NonResourceRule(urls []string, verbs ...string) PolicyRule {
	return PolicyRule{Verbs: verbs, NonResourceURLs: urls}
}

// BootstrapClusterRole returns a ClusterRole labelled and annotated as
// kube-apiserver's default roles are (kubernetes.io/bootstrapping:
// rbac-defaults; autoupdate "true", which Reconcile honours), with extra
// labels.
func BootstrapClusterRole(name string, labels map[string]string, rules ...PolicyRule) ClusterRole {
	l := map[string]string{BootstrappingLabelKey: BootstrappingLabel}
	maps.Copy(l, labels)
	return ClusterRole{
		TypeMeta: meta.TypeMeta{APIVersion: GroupName + "/" + Version, Kind: KindClusterRole},
		ObjectMeta: meta.ObjectMeta{Name: name, Labels: l,
			Annotations: map[string]string{AutoUpdateAnnotation: "true"}},
		Rules: rules,
	}
}

// BootstrapClusterRoleBinding binds a ClusterRole of the same name to
// groups, labelled and annotated as kube-apiserver's default bindings.
func BootstrapClusterRoleBinding(name string, groups ...string) ClusterRoleBinding {
	b := ClusterRoleBinding{
		TypeMeta: meta.TypeMeta{APIVersion: GroupName + "/" + Version, Kind: KindClusterRoleBinding},
		ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{BootstrappingLabelKey: BootstrappingLabel},
			Annotations: map[string]string{AutoUpdateAnnotation: "true"}},
		RoleRef: RoleRef{APIGroup: GroupName, Kind: KindClusterRole, Name: name},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, Subject{Kind: GroupKind, APIGroup: GroupName, Name: g})
	}
	return b
}

func aggregated(name string, labels map[string]string, selectorLabel string) ClusterRole {
	r := BootstrapClusterRole(name, labels)
	r.AggregationRule = &AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{
		{MatchLabels: map[string]string{selectorLabel: "true"}}}}
	return r
}

// readWrite are the verbs of full access to a resource.
var readWrite = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// MonitoringGroup is the group kube-apiserver's bootstrap policy lets read
// /metrics (ClusterRole and ClusterRoleBinding system:monitoring): put a
// scraper's identity in it.
const MonitoringGroup = "system:monitoring"

// DefaultPolicy is the part of kube-apiserver's bootstrap policy that
// applies to an apikit server:
//
//   - cluster-admin (everything), bound to system:masters;
//   - admin, edit and view, aggregated from ClusterRoles labelled
//     rbac.authorization.k8s.io/aggregate-to-admin, -edit and -view (view
//     aggregates into edit, edit into admin), with admin managing Roles and
//     RoleBindings through system:aggregate-to-admin;
//   - system:discovery (discovery, OpenAPI, health, version) and
//     system:basic-user (SelfSubjectAccessReview, SelfSubjectRulesReview,
//     SelfSubjectReview), bound to system:authenticated;
//   - system:public-info-viewer (health and version), bound to
//     system:authenticated and system:unauthenticated;
//   - system:monitoring (/metrics, /metrics/slis and the health
//     endpoints with their checks), bound to the group system:monitoring,
//     for scrapers;
//   - system:auth-delegator (create TokenReviews and
//     SubjectAccessReviews), bound to nobody: bind it to the user of a
//     server delegated from this one (its --authentication-kubeconfig and
//     --authorization-kubeconfig), as kube-apiserver's is.
//
// A program serving its own API adds ClusterRoles labelled
// aggregate-to-view/edit/admin so that the default roles cover it.
func DefaultPolicy() Policy {
	return Policy{
		ClusterRoles: []ClusterRole{
			BootstrapClusterRole("cluster-admin", nil,
				Rule(APIGroupAll, []string{ResourceAll}, VerbAll),
				NonResourceRule([]string{NonResourceAll}, VerbAll)),
			aggregated("admin", nil, AggregateToAdmin),
			aggregated("edit", map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
			aggregated("view", map[string]string{AggregateToEdit: "true"}, AggregateToView),
			BootstrapClusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"},
				Rule("authorization.k8s.io", []string{"localsubjectaccessreviews"}, "create"),
				Rule(GroupName, []string{"rolebindings", "roles"}, readWrite...)),
			BootstrapClusterRole("system:discovery", nil,
				NonResourceRule([]string{"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"}, "get")),
			BootstrapClusterRole("system:basic-user", nil,
				Rule("authorization.k8s.io", []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, "create"),
				Rule("authentication.k8s.io", []string{"selfsubjectreviews"}, "create")),
			BootstrapClusterRole("system:public-info-viewer", nil,
				NonResourceRule([]string{"/healthz", "/livez", "/readyz", "/version", "/version/"}, "get")),
			BootstrapClusterRole("system:monitoring", nil,
				NonResourceRule([]string{"/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"}, "get")),
			BootstrapClusterRole("system:auth-delegator", nil,
				Rule("authentication.k8s.io", []string{"tokenreviews"}, "create"),
				Rule("authorization.k8s.io", []string{"subjectaccessreviews"}, "create")),
		},
		ClusterRoleBindings: []ClusterRoleBinding{
			BootstrapClusterRoleBinding("cluster-admin", authn.SystemPrivilegedGroup),
			BootstrapClusterRoleBinding("system:discovery", authn.AllAuthenticated),
			BootstrapClusterRoleBinding("system:basic-user", authn.AllAuthenticated),
			BootstrapClusterRoleBinding("system:public-info-viewer", authn.AllAuthenticated, authn.AllUnauthenticated),
			BootstrapClusterRoleBinding("system:monitoring", MonitoringGroup),
		},
	}
}

// Reconcile puts p in the stores as kube-apiserver's bootstrap-roles hook
// does, without clobbering what users changed: a missing object is
// created; an existing one annotated rbac.authorization.kubernetes.io/
// autoupdate=false is left alone; any other gets back the labels,
// annotations, rules, aggregation selectors and subjects it lacks, keeping
// whatever was added. A binding whose roleRef differs is deleted and
// created again (roleRef cannot be updated). Aggregated ClusterRoles'
// rules are the aggregation controller's and are not reconciled.
//
// One consistent list of each resource tells it what is stored: an
// object that is missing is created, one that needs nothing is left
// without a further read, and only one that needs a change is read again
// and updated (what a concurrent writer did meanwhile is kept). A read per
// default object cost the server a round trip to etcd each before it was
// ready, and on every restart.
//
// The objects are independent of each other, so they are reconciled a few
// at a time: on a fresh store that is the difference between one storage
// round trip per default object and a few in all, before the server is
// ready.
func Reconcile(ctx context.Context, s *Stores, p Policy) error {
	var roles map[string]*ClusterRole
	var bindings map[string]*ClusterRoleBinding
	lists := workgroup.New(2)
	lists.Go(func() (err error) {
		roles, err = byName(ctx, s.ClusterRoles)
		return err
	})
	lists.Go(func() (err error) {
		bindings, err = byName(ctx, s.ClusterRoleBindings)
		return err
	})
	if err := lists.Wait(); err != nil {
		return err
	}
	g := workgroup.New(reconcileWorkers)
	for i := range p.ClusterRoles {
		want := &p.ClusterRoles[i]
		g.Go(func() error {
			if err := reconcileClusterRole(ctx, s.ClusterRoles, roles[want.Name], want); err != nil {
				return fmt.Errorf("reconciling ClusterRole %s: %w", want.Name, err)
			}
			return nil
		})
	}
	for i := range p.ClusterRoleBindings {
		want := &p.ClusterRoleBindings[i]
		g.Go(func() error {
			if err := reconcileClusterRoleBinding(ctx, s.ClusterRoleBindings, bindings[want.Name], want); err != nil {
				return fmt.Errorf("reconciling ClusterRoleBinding %s: %w", want.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// byName lists st's objects (cluster-scoped) by name.
func byName[T meta.Object](ctx context.Context, st *registry.Store[T]) (map[string]T, error) {
	l, err := st.List(ctx, "", meta.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", st.Resource(), err)
	}
	m := make(map[string]T, len(l.Items))
	for _, e := range l.Items {
		m[e.Object.GetObjectMeta().Name] = e.Object
	}
	return m, nil
}

// reconcileWorkers bounds the objects Reconcile writes at once.
const reconcileWorkers = 16

// addMissing adds want's entries absent from have; it reports a change.
func addMissing(have *map[string]string, want map[string]string) bool {
	changed := false
	for k, v := range want {
		if _, ok := (*have)[k]; ok {
			continue
		}
		if *have == nil {
			*have = map[string]string{}
		}
		(*have)[k] = v
		changed = true
	}
	return changed
}

// reconcileClusterRole makes the stored ClusterRole want.Name cover want;
// listed is what the list found of it (nil when absent). The list's
// object is shared and only read.
func reconcileClusterRole(ctx context.Context, st *registry.Store[*ClusterRole], listed, want *ClusterRole) error {
	if listed == nil {
		_, err := st.Create(ctx, "", copyClusterRole(want), registry.WriteOptions{})
		if !meta.IsAlreadyExists(err) {
			return err
		}
		// Created since the list: reconciled with what is stored below.
	} else if listed.Annotations[AutoUpdateAnnotation] == "false" || !mergeClusterRole(copyClusterRole(listed), want) {
		return nil
	}
	_, _, err := st.Update(ctx, "", want.Name, func(_ context.Context, cur *ClusterRole) (*ClusterRole, error) {
		if cur == nil {
			return copyClusterRole(want), nil
		}
		if cur.Annotations[AutoUpdateAnnotation] == "false" || !mergeClusterRole(cur, want) {
			return nil, errUnchanged
		}
		return cur, nil
	}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{}})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// copyClusterRole copies what mergeClusterRole may change.
func copyClusterRole(r *ClusterRole) *ClusterRole {
	c := *r
	c.Labels, c.Annotations = maps.Clone(r.Labels), maps.Clone(r.Annotations)
	c.Rules = slices.Clone(r.Rules)
	if r.AggregationRule != nil {
		a := *r.AggregationRule
		a.ClusterRoleSelectors = slices.Clone(a.ClusterRoleSelectors)
		c.AggregationRule = &a
	}
	return &c
}

// mergeClusterRole adds to cur the labels, annotations, rules and
// aggregation selectors of want it lacks; it reports a change.
func mergeClusterRole(cur, want *ClusterRole) bool {
	changed := addMissing(&cur.Labels, want.Labels)
	changed = addMissing(&cur.Annotations, want.Annotations) || changed
	if want.AggregationRule != nil {
		if cur.AggregationRule == nil {
			cur.AggregationRule = &AggregationRule{}
		}
		for _, sel := range want.AggregationRule.ClusterRoleSelectors {
			w := &AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{sel}}
			if !slices.ContainsFunc(cur.AggregationRule.ClusterRoleSelectors, func(s meta.LabelSelector) bool {
				return aggregationEqual(&AggregationRule{ClusterRoleSelectors: []meta.LabelSelector{s}}, w)
			}) {
				cur.AggregationRule.ClusterRoleSelectors = append(cur.AggregationRule.ClusterRoleSelectors, sel)
				changed = true
			}
		}
	} else {
		for _, r := range want.Rules {
			if ok, _ := Covers(cur.Rules, []PolicyRule{r}); !ok {
				cur.Rules = append(cur.Rules, r)
				changed = true
			}
		}
	}
	return changed
}

// reconcileClusterRoleBinding makes the stored ClusterRoleBinding
// want.Name cover want; listed is what the list found of it (nil when
// absent). The list's object is shared and only read.
func reconcileClusterRoleBinding(ctx context.Context, st *registry.Store[*ClusterRoleBinding], listed, want *ClusterRoleBinding) error {
	if listed == nil {
		_, err := st.Create(ctx, "", copyClusterRoleBinding(want), registry.WriteOptions{})
		if !meta.IsAlreadyExists(err) {
			return err
		}
		// Created since the list: reconciled with what is stored below.
	} else if listed.Annotations[AutoUpdateAnnotation] == "false" ||
		(listed.RoleRef == want.RoleRef && !mergeClusterRoleBinding(copyClusterRoleBinding(listed), want)) {
		return nil
	}
	for attempt := 0; ; attempt++ {
		recreate := false
		_, _, err := st.Update(ctx, "", want.Name, func(_ context.Context, cur *ClusterRoleBinding) (*ClusterRoleBinding, error) {
			if cur == nil {
				return copyClusterRoleBinding(want), nil
			}
			if cur.Annotations[AutoUpdateAnnotation] == "false" {
				return nil, errUnchanged
			}
			if cur.RoleRef != want.RoleRef {
				recreate = true
				return nil, errUnchanged
			}
			if !mergeClusterRoleBinding(cur, want) {
				return nil, errUnchanged
			}
			return cur, nil
		}, registry.UpdateOptions{})
		if err != nil && !errors.Is(err, errUnchanged) {
			return err
		}
		if !recreate || attempt > 0 {
			return nil
		}
		if _, _, err := st.Delete(ctx, "", want.Name, registry.DeleteOptions{}); err != nil && !meta.IsNotFound(err) {
			return err
		}
	}
}

// copyClusterRoleBinding copies what mergeClusterRoleBinding may change.
func copyClusterRoleBinding(b *ClusterRoleBinding) *ClusterRoleBinding {
	c := *b
	c.Labels, c.Annotations = maps.Clone(b.Labels), maps.Clone(b.Annotations)
	c.Subjects = slices.Clone(b.Subjects)
	return &c
}

// mergeClusterRoleBinding adds to cur the labels, annotations and
// subjects of want it lacks; it reports a change.
func mergeClusterRoleBinding(cur, want *ClusterRoleBinding) bool {
	changed := addMissing(&cur.Labels, want.Labels)
	changed = addMissing(&cur.Annotations, want.Annotations) || changed
	for _, s := range want.Subjects {
		if !slices.Contains(cur.Subjects, s) {
			cur.Subjects = append(cur.Subjects, s)
			changed = true
		}
	}
	return changed
}

// errUnchanged ends an update that has nothing to write. It is a
// StatusError so that the store passes it through as is.
var errUnchanged = &meta.StatusError{ErrStatus: meta.Status{Message: "unchanged"}}
