package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/internal/workgroup"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Ensure brings the stored configuration in line with kube-apiserver's
// defaults, as its configuration producer does:
//
//   - a mandatory object (exempt and catch-all, schemas and levels) is
//     created when missing and its spec kept as built in;
//   - a suggested object is created when missing; its spec is kept up to
//     date while its apf.kubernetes.io/autoupdate-spec annotation is
//     "true" (or, without a valid annotation, while nobody changed it:
//     generation 1), and left alone when it is "false";
//   - an object marked for auto-update that is no longer a default is
//     deleted.
//
// It returns every failure; what could be done is done.
//
// One consistent list of each resource tells it what is stored, as
// kube-apiserver's producer reads its informers' caches: a read per default
// object cost the server two dozen round trips to etcd before it was ready.
// A write that races the list still meets the stored object: a create finds
// it exists, an update applies to what is there.
//
// The objects are independent, so they are written a few at a time: on a
// fresh store that spares the server most of a round trip per default
// object before it is ready.
func (a *API) Ensure(ctx context.Context) error {
	var fsList *registry.ListResult[*flowSchema]
	var plList *registry.ListResult[*priorityLevel]
	lists := workgroup.New(2)
	lists.Go(func() (err error) {
		fsList, err = a.FlowSchemas.List(ctx, "", meta.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing %s: %w", a.FlowSchemas.Resource(), err)
		}
		return nil
	})
	lists.Go(func() (err error) {
		plList, err = a.PriorityLevels.List(ctx, "", meta.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing %s: %w", a.PriorityLevels.Resource(), err)
		}
		return nil
	})
	if err := lists.Wait(); err != nil {
		return err
	}
	curFS, curPL := byName(fsList), byName(plList)

	g := workgroup.New(ensureWorkers)
	bootFS := map[string]bool{}
	bootPL := map[string]bool{}
	for i, list := range [][]*priorityLevel{flowcontrol.MandatoryPriorityLevels(), flowcontrol.SuggestedPriorityLevels()} {
		for _, pl := range list {
			bootPL[pl.Name] = true
			g.Go(func() error {
				cur, found := curPL[pl.Name]
				return ensure(ctx, a.PriorityLevels, cur, found, pl, i == 0, plSpec, setPLSpec, flowcontrol.SetPriorityLevelDefaults)
			})
		}
	}
	for i, list := range [][]*flowSchema{flowcontrol.MandatoryFlowSchemas(), flowcontrol.SuggestedFlowSchemas()} {
		for _, fs := range list {
			bootFS[fs.Name] = true
			g.Go(func() error {
				cur, found := curFS[fs.Name]
				return ensure(ctx, a.FlowSchemas, cur, found, fs, i == 0, fsSpec, setFSSpec, flowcontrol.SetFlowSchemaDefaults)
			})
		}
	}
	return errors.Join(g.Wait(), removeStale(ctx, a.FlowSchemas, fsList, bootFS), removeStale(ctx, a.PriorityLevels, plList, bootPL))
}

// byName indexes a list's objects by name (the resources are cluster-scoped).
func byName[T meta.Object](l *registry.ListResult[T]) map[string]T {
	m := make(map[string]T, len(l.Items))
	for _, e := range l.Items {
		m[e.Object.GetObjectMeta().Name] = e.Object
	}
	return m
}

// ensureWorkers bounds the objects Ensure writes at once.
const ensureWorkers = 16

func plSpec(pl *priorityLevel) any                   { return pl.Spec }
func setPLSpec(dst, src *priorityLevel)              { dst.Spec = src.Spec }
func fsSpec(fs *flowSchema) any                      { return fs.Spec }
func setFSSpec(dst, src *flowSchema)                 { dst.Spec = src.Spec }
func specJSON[T any](spec func(T) any, obj T) []byte { b, _ := json.Marshal(spec(obj)); return b }

// ensure makes want exist, with its spec when the rules above say so; cur
// is the stored object of want's name when found.
func ensure[T meta.Object](ctx context.Context, st *registry.Store[T], cur T, found bool, want T, mandatory bool,
	spec func(T) any, setSpec func(dst, src T), setDefaults func(T)) error {
	setDefaults(want)
	name := want.GetObjectMeta().Name
	if !found {
		if _, err := st.Create(ctx, "", want, registry.WriteOptions{}); err != nil && !meta.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %q: %w", st.Resource(), name, err)
		}
		return nil
	}
	m := cur.GetObjectMeta()
	if !mandatory && !shouldUpdateSpec(m) {
		return nil
	}
	if string(specJSON(spec, cur)) == string(specJSON(spec, want)) && m.Annotations[flowcontrol.AutoUpdateAnnotation] == "true" {
		return nil
	}
	_, _, err := st.Update(ctx, "", name, func(_ context.Context, obj T) (T, error) {
		// The list may be older than what is stored: the rules are
		// checked again on the object the update applies to.
		if !mandatory && !shouldUpdateSpec(obj.GetObjectMeta()) {
			var zero T
			return zero, errUnchanged
		}
		setSpec(obj, want)
		om := obj.GetObjectMeta()
		if om.Annotations == nil {
			om.Annotations = map[string]string{}
		}
		om.Annotations[flowcontrol.AutoUpdateAnnotation] = "true"
		return obj, nil
	}, registry.UpdateOptions{})
	if err != nil && !errors.Is(err, errUnchanged) && !meta.IsNotFound(err) && !meta.IsConflict(err) {
		return fmt.Errorf("updating %s %q: %w", st.Resource(), name, err)
	}
	return nil
}

// errUnchanged ends an update that has nothing to write. It is a
// StatusError so that the store passes it through as is.
var errUnchanged = &meta.StatusError{ErrStatus: meta.Status{Message: "unchanged"}}

// shouldUpdateSpec is kube-apiserver's rule for suggested objects.
func shouldUpdateSpec(m *meta.ObjectMeta) bool {
	if b, err := strconv.ParseBool(m.Annotations[flowcontrol.AutoUpdateAnnotation]); err == nil {
		return b
	}
	return m.Generation == 1
}

// removeStale deletes auto-updated objects that are no longer defaults.
func removeStale[T meta.Object](ctx context.Context, st *registry.Store[T], list *registry.ListResult[T], defaults map[string]bool) error {
	var errs []error
	for _, e := range list.Items {
		m := e.Object.GetObjectMeta()
		if defaults[m.Name] || m.Annotations[flowcontrol.AutoUpdateAnnotation] != "true" {
			continue
		}
		uid := m.UID
		if _, _, err := st.Delete(ctx, "", m.Name, registry.DeleteOptions{Preconditions: &meta.Preconditions{UID: &uid}}); err != nil &&
			!meta.IsNotFound(err) && !meta.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting %s %q: %w", st.Resource(), m.Name, err))
		}
	}
	return errors.Join(errs...)
}
