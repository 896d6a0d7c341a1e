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
// The objects are independent, so they are written a few at a time: on a
// fresh store that spares the server most of a round trip per default
// object before it is ready.
func (a *API) Ensure(ctx context.Context) error {
	g := workgroup.New(ensureWorkers)
	bootFS := map[string]bool{}
	bootPL := map[string]bool{}
	for i, list := range [][]*priorityLevel{flowcontrol.MandatoryPriorityLevels(), flowcontrol.SuggestedPriorityLevels()} {
		for _, pl := range list {
			bootPL[pl.Name] = true
			g.Go(func() error {
				return ensure(ctx, a.PriorityLevels, pl, i == 0, plSpec, setPLSpec, flowcontrol.SetPriorityLevelDefaults)
			})
		}
	}
	for i, list := range [][]*flowSchema{flowcontrol.MandatoryFlowSchemas(), flowcontrol.SuggestedFlowSchemas()} {
		for _, fs := range list {
			bootFS[fs.Name] = true
			g.Go(func() error {
				return ensure(ctx, a.FlowSchemas, fs, i == 0, fsSpec, setFSSpec, flowcontrol.SetFlowSchemaDefaults)
			})
		}
	}
	return errors.Join(g.Wait(), removeStale(ctx, a.FlowSchemas, bootFS), removeStale(ctx, a.PriorityLevels, bootPL))
}

// ensureWorkers bounds the objects Ensure writes at once.
const ensureWorkers = 16

func plSpec(pl *priorityLevel) any                   { return pl.Spec }
func setPLSpec(dst, src *priorityLevel)              { dst.Spec = src.Spec }
func fsSpec(fs *flowSchema) any                      { return fs.Spec }
func setFSSpec(dst, src *flowSchema)                 { dst.Spec = src.Spec }
func specJSON[T any](spec func(T) any, obj T) []byte { b, _ := json.Marshal(spec(obj)); return b }

// ensure makes want exist, with its spec when the rules above say so.
func ensure[T meta.Object](ctx context.Context, st *registry.Store[T], want T, mandatory bool,
	spec func(T) any, setSpec func(dst, src T), setDefaults func(T)) error {
	setDefaults(want)
	name := want.GetObjectMeta().Name
	cur, _, err := st.Get(ctx, "", name, meta.GetOptions{})
	switch {
	case meta.IsNotFound(err):
		if _, err := st.Create(ctx, "", want, registry.WriteOptions{}); err != nil && !meta.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %q: %w", st.Resource(), name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading %s %q: %w", st.Resource(), name, err)
	}
	m := cur.GetObjectMeta()
	if !mandatory && !shouldUpdateSpec(m) {
		return nil
	}
	if string(specJSON(spec, cur)) == string(specJSON(spec, want)) && m.Annotations[flowcontrol.AutoUpdateAnnotation] == "true" {
		return nil
	}
	_, _, err = st.Update(ctx, "", name, func(_ context.Context, obj T) (T, error) {
		setSpec(obj, want)
		om := obj.GetObjectMeta()
		if om.Annotations == nil {
			om.Annotations = map[string]string{}
		}
		om.Annotations[flowcontrol.AutoUpdateAnnotation] = "true"
		return obj, nil
	}, registry.UpdateOptions{})
	if err != nil && !meta.IsNotFound(err) && !meta.IsConflict(err) {
		return fmt.Errorf("updating %s %q: %w", st.Resource(), name, err)
	}
	return nil
}

// shouldUpdateSpec is kube-apiserver's rule for suggested objects.
func shouldUpdateSpec(m *meta.ObjectMeta) bool {
	if b, err := strconv.ParseBool(m.Annotations[flowcontrol.AutoUpdateAnnotation]); err == nil {
		return b
	}
	return m.Generation == 1
}

// removeStale deletes auto-updated objects that are no longer defaults.
func removeStale[T meta.Object](ctx context.Context, st *registry.Store[T], defaults map[string]bool) error {
	list, err := st.List(ctx, "", meta.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing %s: %w", st.Resource(), err)
	}
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
