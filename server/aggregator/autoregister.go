package aggregator

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
)

// AutomanagedLabel marks the local APIServices the aggregator registers
// for its own chain, as kube-aggregator's autoregister controller labels
// them. Its value AutomanagedOnStart marks those of built-in
// group-versions, reconciled at every start; AutomanagedAlways those of
// group-versions that come and go while the server runs (CRD versions),
// kept as long as they are served. Removing the label hands an APIService
// over to its users.
const AutomanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// Values of AutomanagedLabel, kube-aggregator's.
const (
	AutomanagedOnStart = "onstart"
	AutomanagedAlways  = "true"
)

// priorities of the built-in groups apikit servers serve, as
// kube-apiserver's apiVersionPriorities has them; other groups get
// groupPriorityMinimum 1000 and a versionPriority from 100 down, in the
// order their APIGroupInfo lists versions.
var priorities = map[meta.GroupVersion][2]int32{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: GroupName, Version: "v1"}:                      {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
}

// Priorities of a CRD version's APIService, kube-apiserver's
// crdRegistrationController's: every version of a CRD group has the same,
// so that kube-like version order decides among them.
const (
	crdGroupPriorityMinimum = 1000
	crdVersionPriority      = 100
)

// localSpecs are the specs of the local APIServices of the chain's
// group-versions, of the groups keep keeps (all when nil).
func localSpecs(groups []*server.APIGroupInfo, keep func(*server.APIGroupInfo) bool) []APIServiceSpec {
	var out []APIServiceSpec
	for _, g := range groups {
		if keep != nil && !keep(g) {
			continue
		}
		for i, v := range g.Versions {
			gv := meta.GroupVersion{Group: g.Name, Version: v.Version}
			p, ok := priorities[gv]
			switch {
			case ok:
			case g.Dynamic():
				p = [2]int32{crdGroupPriorityMinimum, crdVersionPriority}
			default:
				p = [2]int32{1000, max(100-int32(i), 1)}
			}
			out = append(out, APIServiceSpec{Group: g.Name, Version: v.Version, GroupPriorityMinimum: p[0], VersionPriority: p[1]})
		}
	}
	return out
}

// autoregister is the post-start hook kube-apiserver-autoregistration:
// it makes a local APIService (labelled AutomanagedOnStart) for every
// group-version the chain serves for its lifetime, puts back the spec of
// one a user changed, and deletes those of group-versions no longer
// served. Storage that does not answer is retried for 30 seconds, as the
// RBAC bootstrap does. Then it starts registerDynamicGroups.
func (a *Aggregator) autoregister(ctx context.Context) error {
	builtIn := localSpecs(a.GenericServer.APIGroups(), func(g *server.APIGroupInfo) bool { return !g.Dynamic() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := a.reconcileLocal(ctx, builtIn, AutomanagedOnStart)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("registering local APIServices: %w", err)
		}
		a.cfg.Logger.Info("aggregator: registering local APIServices failed; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	skip := make(map[meta.GroupVersion]bool, len(builtIn))
	for _, s := range builtIn {
		skip[s.GroupVersion()] = true
	}
	// Watching before the first round: a change between the two is
	// another round, never lost.
	stop := a.GenericServer.WatchAPIGroups(a.registerAgain)
	a.wg.Go(func() {
		defer stop()
		a.registerDynamicGroups(ctx, skip)
	})
	return nil
}

// registerDynamicGroups keeps a local APIService (labelled
// AutomanagedAlways) for every group-version of the chain's dynamic groups
// (the CRD versions an extensions server behind the aggregator serves), as
// kube-apiserver's crdRegistrationController and autoregister controller
// do: made when it is served, deleted when it no longer is, put back when
// a user deletes or changes it. It reads the chain as the garbage
// collector does, again whenever WatchAPIGroups calls registerAgain, and
// does nothing while APIGroupsSynced is false (the CRDs stored at start
// not served yet: an absent version is then not known to be gone). A
// group-version of builtIn (registered on start) is left to that
// registration. It runs until ctx ends; a failed round is retried after a
// second.
func (a *Aggregator) registerDynamicGroups(ctx context.Context, builtIn map[meta.GroupVersion]bool) {
	for {
		var retry <-chan time.Time
		if a.GenericServer.APIGroupsSynced() {
			var specs []APIServiceSpec
			for _, g := range a.GenericServer.APIGroups() {
				if !g.Dynamic() {
					continue
				}
				for _, v := range g.Versions {
					if gv := (meta.GroupVersion{Group: g.Name, Version: v.Version}); !builtIn[gv] {
						specs = append(specs, APIServiceSpec{Group: gv.Group, Version: gv.Version,
							GroupPriorityMinimum: crdGroupPriorityMinimum, VersionPriority: crdVersionPriority})
					}
				}
			}
			if err := a.reconcileLocal(ctx, specs, AutomanagedAlways); err != nil {
				if ctx.Err() != nil {
					return
				}
				a.cfg.Logger.Warn("aggregator: registering the APIServices of custom resources failed; retrying", "err", err)
				retry = time.After(time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-a.autoregisterAgain:
		case <-retry:
		}
	}
}

// registerAgain asks registerDynamicGroups for another round, after the
// chain's groups or an APIService it may keep changed. It must not block:
// WatchAPIGroups calls it on the goroutine that made the change.
func (a *Aggregator) registerAgain() {
	select {
	case a.autoregisterAgain <- struct{}{}:
	default:
	}
}

// reconcileLocal makes the local APIService of each spec, labelled
// AutomanagedLabel: label, or sets the spec and label of one that is
// automanaged otherwise; and deletes the local APIServices labelled label
// that are not among specs. APIServices without the label are their
// users' and left alone.
func (a *Aggregator) reconcileLocal(ctx context.Context, specs []APIServiceSpec, label string) error {
	list, err := a.Store.List(ctx, "", meta.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing APIServices: %w", err)
	}
	current := make(map[string]*APIService, len(list.Items))
	for _, e := range list.Items {
		current[e.Object.Name] = e.Object
	}
	want := make(map[string]bool, len(specs))
	for _, spec := range specs {
		name := APIServiceName(spec.GroupVersion())
		want[name] = true
		cur := current[name]
		switch {
		case cur == nil:
			obj := &APIService{
				TypeMeta:   meta.TypeMeta{APIVersion: GroupName + "/" + Version, Kind: "APIService"},
				ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{AutomanagedLabel: label}},
				Spec:       spec,
			}
			if _, err := a.Store.Create(ctx, "", obj, registry.WriteOptions{}); err != nil && !meta.IsAlreadyExists(err) {
				return fmt.Errorf("creating APIService %s: %w", name, err)
			}
		case cur.Labels[AutomanagedLabel] == "" || cur.Labels[AutomanagedLabel] == label && reflect.DeepEqual(cur.Spec, spec):
			// A user's own APIService, or as it should be.
		default:
			_, _, err := a.Store.Update(ctx, "", name, func(_ context.Context, cur *APIService) (*APIService, error) {
				if cur.Labels[AutomanagedLabel] == "" {
					return cur, nil // handed over meanwhile
				}
				cur.Labels = maps.Clone(cur.Labels)
				cur.Labels[AutomanagedLabel] = label
				cur.Spec = spec
				return cur, nil
			}, registry.UpdateOptions{})
			if err != nil && !meta.IsNotFound(err) {
				return fmt.Errorf("updating APIService %s: %w", name, err)
			}
		}
	}
	for _, s := range current {
		if want[s.Name] || s.Spec.Service != nil || s.Labels[AutomanagedLabel] != label {
			continue
		}
		uid := s.UID
		if _, _, err := a.Store.Delete(ctx, "", s.Name, registry.DeleteOptions{Preconditions: &meta.Preconditions{UID: &uid}}); err != nil &&
			!meta.IsNotFound(err) && !meta.IsConflict(err) {
			return fmt.Errorf("deleting APIService %s, no longer served: %w", s.Name, err)
		}
	}
	return nil
}
