package extensions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// controller keeps the CRDs' names and conditions, the serving state and
// the cleanup finalizer, as kube-apiserver's naming, establishing,
// finalizer and crdHandler controllers do, from one informer. One worker
// handles the CRDs whose names were queued; a failed one is queued again
// after a second.
type controller struct {
	s   *Server
	inf *informer.Informer[*CustomResourceDefinition]

	mu    sync.Mutex
	dirty map[string]bool
	kick  chan struct{}

	// built holds what the worker last built, by CRD name, and
	// generation counts its publishes; only the worker touches them.
	built      map[string]*servedCRD
	generation uint64
}

func newController(s *Server) *controller {
	c := &controller{s: s, dirty: map[string]bool{}, kick: make(chan struct{}, 1), built: map[string]*servedCRD{}}
	c.inf = informer.New(informer.Config[*CustomResourceDefinition]{
		Source: s.Store,
		Name:   "customresourcedefinitions",
		Logger: s.logger,
		Handlers: informer.Handlers[*CustomResourceDefinition]{
			OnAdd:    c.changed,
			OnUpdate: func(_, crd *CustomResourceDefinition) { c.changed(crd) },
			OnDelete: c.changed,
		},
	})
	return c
}

// changed queues a CRD and the others of its group, whose names may
// conflict with it.
func (c *controller) changed(crd *CustomResourceDefinition) {
	names := []string{crd.Name}
	for _, other := range c.inf.List() {
		if other.Spec.Group == crd.Spec.Group && other.Name != crd.Name {
			names = append(names, other.Name)
		}
	}
	c.enqueue(names...)
}

func (c *controller) enqueue(names ...string) {
	c.mu.Lock()
	for _, n := range names {
		c.dirty[n] = true
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// start is the post-start hook: it runs the informer and the worker until
// ctx ends, and returns once the CRDs stored at start are served.
func (c *controller) start(ctx context.Context) error {
	c.s.wg.Add(2)
	go func() {
		defer c.s.wg.Done()
		c.inf.Run(ctx)
	}()
	ready := make(chan struct{})
	go func() {
		defer c.s.wg.Done()
		c.run(ctx, ready)
	}()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the worker. It closes ready once the CRDs the informer found
// first are served.
func (c *controller) run(ctx context.Context, ready chan struct{}) {
	if err := c.inf.WaitForSync(ctx); err != nil {
		return
	}
	for _, crd := range c.inf.List() {
		if err := c.sync(ctx, crd.Name); err != nil {
			c.enqueue(crd.Name)
		}
	}
	c.publish()
	close(ready)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		c.mu.Lock()
		dirty := c.dirty
		c.dirty = map[string]bool{}
		c.mu.Unlock()
		for name := range dirty {
			if err := c.sync(ctx, name); err != nil {
				if ctx.Err() != nil {
					return
				}
				c.s.logger.Warn("syncing a CustomResourceDefinition failed; retrying", "name", name, "err", err)
				time.AfterFunc(time.Second, func() { c.enqueue(name) })
			}
		}
		c.publish()
	}
}

// sync brings one CRD's status up to date, or runs its finalizer.
func (c *controller) sync(ctx context.Context, name string) error {
	crd, ok := c.inf.Get("", name)
	if !ok {
		return nil
	}
	if crd.DeletionTimestamp != nil {
		return c.finalize(ctx, crd)
	}
	names, accepted, established := c.names(crd)
	if equalNames(names, crd.Status.AcceptedNames) && sameCondition(crd, accepted) && sameCondition(crd, established) {
		return nil
	}
	return c.updateStatus(ctx, name, func(st *CustomResourceDefinitionStatus, now meta.Time) {
		st.AcceptedNames = names
		st.SetCondition(accepted, now)
		st.SetCondition(established, now)
	})
}

func sameCondition(crd *CustomResourceDefinition, want CustomResourceDefinitionCondition) bool {
	c := crd.Status.Condition(want.Type)
	return c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message
}

func equalNames(a, b CustomResourceDefinitionNames) bool {
	return a.Plural == b.Plural && a.Singular == b.Singular && a.Kind == b.Kind && a.ListKind == b.ListKind &&
		slices.Equal(a.ShortNames, b.ShortNames) && slices.Equal(a.Categories, b.Categories)
}

// names decides a CRD's accepted names and its NamesAccepted and
// Established conditions as kube-apiserver's naming controller does: a
// name another CRD of the group has accepted (plural, singular and short
// names in one space, kind and list kind in another) is a conflict, and
// the names accepted before stay.
func (c *controller) names(crd *CustomResourceDefinition) (CustomResourceDefinitionNames, CustomResourceDefinitionCondition, CustomResourceDefinitionCondition) {
	used, kinds := map[string]bool{}, map[string]bool{}
	for _, other := range c.inf.List() {
		if other.Spec.Group != crd.Spec.Group || other.Name == crd.Name {
			continue
		}
		n := other.Status.AcceptedNames
		used[n.Plural], used[n.Singular] = true, true
		for _, s := range n.ShortNames {
			used[s] = true
		}
		kinds[n.Kind], kinds[n.ListKind] = true, true
	}
	delete(used, "")
	delete(kinds, "")
	want, old := crd.Spec.Names, crd.Status.AcceptedNames
	names := old
	accepted := CustomResourceDefinitionCondition{Type: NamesAccepted, Status: ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"}
	// Each name is taken on its own; of several conflicts the last is
	// reported, as kube-apiserver's naming controller does.
	take := func(req, acc string, inUse map[string]bool, reason string, to *string) {
		if req != acc && inUse[req] {
			accepted = CustomResourceDefinitionCondition{Type: NamesAccepted, Status: ConditionFalse, Reason: reason, Message: fmt.Sprintf("%q is already in use", req)}
			return
		}
		*to = req
	}
	take(want.Plural, old.Plural, used, "PluralConflict", &names.Plural)
	take(want.Singular, old.Singular, used, "SingularConflict", &names.Singular)
	if !slices.Equal(want.ShortNames, old.ShortNames) {
		var msgs []string
		for _, s := range want.ShortNames {
			if !slices.Contains(old.ShortNames, s) && used[s] {
				msgs = append(msgs, fmt.Sprintf("%q is already in use", s))
			}
		}
		switch len(msgs) {
		case 0:
			names.ShortNames = want.ShortNames
		case 1:
			accepted = CustomResourceDefinitionCondition{Type: NamesAccepted, Status: ConditionFalse, Reason: "ShortNamesConflict", Message: msgs[0]}
		default:
			accepted = CustomResourceDefinitionCondition{Type: NamesAccepted, Status: ConditionFalse, Reason: "ShortNamesConflict", Message: "[" + strings.Join(msgs, ", ") + "]"}
		}
	}
	take(want.Kind, old.Kind, kinds, "KindConflict", &names.Kind)
	take(want.ListKind, old.ListKind, kinds, "ListKindConflict", &names.ListKind)
	names.Categories = want.Categories
	established := CustomResourceDefinitionCondition{Type: Established, Status: ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}
	if old := crd.Status.Condition(Established); old != nil {
		established = *old
	}
	if established.Status != ConditionTrue && accepted.Status == ConditionTrue {
		// The handler serves the CRD from the next publish on, well within
		// the 5 s kube-apiserver's establishing controller may wait.
		established = CustomResourceDefinitionCondition{Type: Established, Status: ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
	}
	return names, accepted, established
}

// updateStatus writes a change of a CRD's status through /status.
func (c *controller) updateStatus(ctx context.Context, name string, change func(*CustomResourceDefinitionStatus, meta.Time)) error {
	_, _, err := c.s.Store.Update(ctx, "", name, func(_ context.Context, cur *CustomResourceDefinition) (*CustomResourceDefinition, error) {
		if cur == nil {
			return nil, meta.NewNotFound(Resource, name)
		}
		change(&cur.Status, meta.NewTime(time.Now().UTC().Truncate(time.Second)))
		return cur, nil
	}, registry.UpdateOptions{Subresource: "status"})
	if meta.IsNotFound(err) {
		return nil
	}
	return err
}

// finalize deletes a terminating CRD's custom resources and then removes
// the cleanup finalizer, as kube-apiserver's finalizer controller does;
// objects with finalizers of their own keep it waiting (queued again).
func (c *controller) finalize(ctx context.Context, crd *CustomResourceDefinition) error {
	if !slices.Contains(crd.Finalizers, CleanupFinalizer) {
		return nil
	}
	if !crd.Status.IsTrue(Terminating) {
		// The handler refuses creates from the next publish on.
		return c.updateStatus(ctx, crd.Name, func(st *CustomResourceDefinitionStatus, now meta.Time) {
			st.SetCondition(CustomResourceDefinitionCondition{Type: Terminating, Status: ConditionTrue,
				Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"}, now)
		})
	}
	if crd.Status.AcceptedNames.Plural != "" {
		sc, err := c.served(crd)
		if err != nil {
			return err
		}
		left, err := deleteAll(ctx, sc)
		if err != nil {
			_ = c.updateStatus(ctx, crd.Name, func(st *CustomResourceDefinitionStatus, now meta.Time) {
				st.SetCondition(CustomResourceDefinitionCondition{Type: Terminating, Status: ConditionTrue,
					Reason: "InstanceDeletionFailed", Message: fmt.Sprintf("could not delete instances: %v", err)}, now)
			})
			return err
		}
		if left > 0 {
			return fmt.Errorf("%d custom resources of %s are still being deleted", left, crd.Name)
		}
	}
	if err := c.updateStatus(ctx, crd.Name, func(st *CustomResourceDefinitionStatus, now meta.Time) {
		st.SetCondition(CustomResourceDefinitionCondition{Type: Terminating, Status: ConditionFalse,
			Reason: "InstanceDeletionCompleted", Message: "removed all instances"}, now)
	}); err != nil {
		return err
	}
	_, _, err := c.s.Store.Update(ctx, "", crd.Name, func(_ context.Context, cur *CustomResourceDefinition) (*CustomResourceDefinition, error) {
		if cur == nil {
			return nil, meta.NewNotFound(Resource, crd.Name)
		}
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == CleanupFinalizer })
		return cur, nil
	}, registry.UpdateOptions{})
	if meta.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteAll deletes every custom resource of sc and returns how many are
// left (being finalized).
func deleteAll(ctx context.Context, sc *servedCRD) (int, error) {
	var res registry.Resource
	for _, v := range sc.versions {
		res = v.resource
		break
	}
	if res == nil {
		return 0, nil
	}
	list, err := res.List(ctx, "", meta.ListOptions{})
	if err != nil {
		return 0, err
	}
	left := 0
	for _, it := range list.Items {
		obj, err := it.Object()
		if err != nil {
			return 0, err
		}
		m := obj.GetObjectMeta()
		_, deleted, err := res.Delete(ctx, m.Namespace, m.Name, registry.DeleteOptions{})
		if meta.IsNotFound(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if !deleted {
			left++
		}
	}
	return left, nil
}

// served returns what serves crd, built anew when the CRD changed.
func (c *controller) served(crd *CustomResourceDefinition) (*servedCRD, error) {
	if sc := c.built[crd.Name]; sc != nil && sc.crd.ResourceVersion == crd.ResourceVersion {
		return sc, nil
	}
	sc, err := c.s.build(crd)
	if err != nil {
		return nil, err
	}
	c.built[crd.Name] = sc
	return sc, nil
}

// publish swaps in the serving state of the CRDs as the informer has
// them: those whose names are accepted or that are established, until
// they are deleted.
func (c *controller) publish() {
	crds := map[string]*servedCRD{}
	for _, crd := range c.inf.List() {
		if !crd.Status.IsTrue(NamesAccepted) && !crd.Status.IsTrue(Established) {
			continue
		}
		sc, err := c.served(crd)
		if err != nil {
			c.s.logger.Error("cannot serve a CustomResourceDefinition", "name", crd.Name, "err", err)
			continue
		}
		crds[crd.Name] = sc
	}
	for name := range c.built {
		if crds[name] == nil {
			delete(c.built, name)
		}
	}
	c.generation++
	c.s.served.Store(newState(crds, c.generation))
	// The garbage collector, the namespace controller and an
	// aggregator's CRD registration follow the custom resources served.
	c.s.GenericServer.DynamicGroupsChanged()
}
