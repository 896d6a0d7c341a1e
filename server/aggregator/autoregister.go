package aggregator

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
)

// AutomanagedLabel marks the local APIServices the aggregator registers
// for its own chain; its value "onstart" means they are reconciled at
// every start, as kube-aggregator's autoregister controller labels them.
// Removing the label hands an APIService over to its users.
const AutomanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// priorities of the built-in groups apikit servers serve, as
// kube-apiserver's apiVersionPriorities has them; other groups get
// groupPriorityMinimum 1000 and a versionPriority from 100 down, in the
// order their APIGroupInfo lists versions.
var priorities = map[meta.GroupVersion][2]int32{
	{Group: GroupName, Version: "v1"}:                      {17800, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
}

// localSpecs are the specs of the local APIServices of the chain's
// group-versions.
func localSpecs(groups []*server.APIGroupInfo) []APIServiceSpec {
	var out []APIServiceSpec
	for _, g := range groups {
		for i, v := range g.Versions {
			gv := meta.GroupVersion{Group: g.Name, Version: v.Version}
			p, ok := priorities[gv]
			if !ok {
				p = [2]int32{1000, max(100-int32(i), 1)}
			}
			out = append(out, APIServiceSpec{Group: g.Name, Version: v.Version, GroupPriorityMinimum: p[0], VersionPriority: p[1]})
		}
	}
	return out
}

// autoregister is the post-start hook kube-apiserver-autoregistration:
// it makes a local APIService (labelled AutomanagedLabel: onstart) for
// every group-version the chain serves, puts back the spec of one a user
// changed, and deletes those of group-versions no longer served. Storage
// that does not answer is retried for 30 seconds, as the RBAC bootstrap
// does.
func (a *Aggregator) autoregister(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := a.reconcileLocal(ctx)
		if err == nil {
			return nil
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
}

func (a *Aggregator) reconcileLocal(ctx context.Context) error {
	want := map[string]bool{}
	for _, spec := range localSpecs(a.GenericServer.APIGroups()) {
		name := APIServiceName(spec.GroupVersion())
		want[name] = true
		cur, _, err := a.Store.Get(ctx, "", name, meta.GetOptions{})
		switch {
		case meta.IsNotFound(err):
			obj := &APIService{
				TypeMeta:   meta.TypeMeta{APIVersion: GroupName + "/" + Version, Kind: "APIService"},
				ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{AutomanagedLabel: "onstart"}},
				Spec:       spec,
			}
			if _, err := a.Store.Create(ctx, "", obj, registry.WriteOptions{}); err != nil && !meta.IsAlreadyExists(err) {
				return fmt.Errorf("creating APIService %s: %w", name, err)
			}
		case err != nil:
			return fmt.Errorf("reading APIService %s: %w", name, err)
		case cur.Labels[AutomanagedLabel] == "" || reflect.DeepEqual(cur.Spec, spec):
			// A user's own APIService, or as it should be.
		default:
			_, _, err := a.Store.Update(ctx, "", name, func(_ context.Context, cur *APIService) (*APIService, error) {
				cur.Spec = spec
				return cur, nil
			}, registry.UpdateOptions{})
			if err != nil && !meta.IsNotFound(err) {
				return fmt.Errorf("updating APIService %s: %w", name, err)
			}
		}
	}
	list, err := a.Store.List(ctx, "", meta.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing APIServices: %w", err)
	}
	for _, e := range list.Items {
		s := e.Object
		if want[s.Name] || s.Spec.Service != nil || s.Labels[AutomanagedLabel] == "" {
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
