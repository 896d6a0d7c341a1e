package resources

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// EnsurePeriod is how often Run reconciles the default configuration, as
// kube-apiserver does (and at once when a mandatory object disappears).
const EnsurePeriod = time.Minute

// Run keeps apf in step with the stored configuration until ctx ends: it
// watches both resources, applies
// every change to apf as it comes, keeps each FlowSchema's Dangling
// condition, restores deleted mandatory objects and ensures the defaults
// (see Ensure) every EnsurePeriod. Failures are logged
// and retried; Run returns when ctx ends.
func (a *API) Run(ctx context.Context, apf *flowcontrol.APF, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	for ctx.Err() == nil {
		if err := a.watch(ctx, apf, log); err != nil && ctx.Err() == nil {
			log.Warn("priority and fairness: configuration watch ended", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// configState is what the controller has seen of the stored objects.
type configState struct {
	fs     map[string]*flowSchema
	pl     map[string]*priorityLevel
	fsSync bool
	plSync bool
}

func watchOptions() meta.ListOptions {
	t := true
	return meta.ListOptions{Watch: true, SendInitialEvents: &t, AllowWatchBookmarks: true,
		ResourceVersionMatch: meta.ResourceVersionMatchNotOlderThan}
}

// watch runs one watch of both resources; it returns when either ends.
func (a *API) watch(ctx context.Context, apf *flowcontrol.APF, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fsEvents, err := a.FlowSchemas.Watch(ctx, "", watchOptions())
	if err != nil {
		return err
	}
	plEvents, err := a.PriorityLevels.Watch(ctx, "", watchOptions())
	if err != nil {
		return err
	}
	st := &configState{fs: map[string]*flowSchema{}, pl: map[string]*priorityLevel{}}
	ensureTick := time.NewTicker(EnsurePeriod)
	defer ensureTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ensureTick.C:
			if err := a.Ensure(ctx); err != nil && ctx.Err() == nil {
				log.Warn("priority and fairness: ensuring the default configuration", "err", err)
			}
			continue
		case ev, ok := <-fsEvents:
			if !ok {
				return nil
			}
			if ev.Type == meta.Error {
				return ev.Err
			}
			if applyEvent(st.fs, ev) {
				st.fsSync = true
			}
		case ev, ok := <-plEvents:
			if !ok {
				return nil
			}
			if ev.Type == meta.Error {
				return ev.Err
			}
			if applyEvent(st.pl, ev) {
				st.plSync = true
			}
		}
		if st.fsSync && st.plSync {
			a.reconcile(ctx, apf, st, log)
		}
	}
}

// applyEvent updates a map from a watch event; it reports whether the
// event ends the initial events.
func applyEvent[T meta.Object](m map[string]T, ev registry.Event[T]) bool {
	switch ev.Type {
	case meta.Added, meta.Modified:
		m[ev.Object.GetObjectMeta().Name] = ev.Object
	case meta.Deleted:
		delete(m, ev.Object.GetObjectMeta().Name)
	case meta.Bookmark:
		return ev.Object.GetObjectMeta().Annotations[meta.InitialEventsAnnotation] == "true"
	}
	return false
}

// reconcile applies the seen configuration and fixes what it must.
func (a *API) reconcile(ctx context.Context, apf *flowcontrol.APF, st *configState, log *slog.Logger) {
	schemas := make([]*flowSchema, 0, len(st.fs))
	for _, fs := range st.fs {
		schemas = append(schemas, fs)
	}
	sort.Slice(schemas, func(i, j int) bool { return schemas[i].Name < schemas[j].Name })
	levels := make([]*priorityLevel, 0, len(st.pl))
	for _, pl := range st.pl {
		levels = append(levels, pl)
	}
	if err := apf.Apply(schemas, levels); err != nil {
		log.Error("priority and fairness: applying the configuration", "err", err)
	}
	for _, name := range []string{flowcontrol.FlowSchemaExempt, flowcontrol.FlowSchemaCatchAll} {
		_, fsOK := st.fs[name]
		_, plOK := st.pl[name]
		if !fsOK || !plOK {
			if err := a.Ensure(ctx); err != nil && ctx.Err() == nil {
				log.Warn("priority and fairness: restoring the mandatory configuration", "err", err)
			}
			break
		}
	}
	now := meta.Now()
	for _, fs := range schemas {
		_, exists := st.pl[fs.Spec.PriorityLevelConfiguration.Name]
		cond := flowcontrol.DanglingCondition(fs, exists, now)
		if !needsCondition(fs, cond) {
			continue
		}
		_, _, err := a.FlowSchemas.Update(ctx, "", fs.Name, func(_ context.Context, cur *flowSchema) (*flowSchema, error) {
			flowcontrol.SetFlowSchemaCondition(cur, flowcontrol.DanglingCondition(cur, exists, now))
			return cur, nil
		}, registry.UpdateOptions{Subresource: "status"})
		if err != nil && !meta.IsNotFound(err) && !meta.IsConflict(err) && ctx.Err() == nil {
			log.Warn("priority and fairness: updating a flow schema's status", "flowSchema", fs.Name, "err", err)
		}
	}
}

// needsCondition reports whether fs lacks c (time aside).
func needsCondition(fs *flowSchema, c flowcontrol.FlowSchemaCondition) bool {
	for _, old := range fs.Status.Conditions {
		if old.Type == c.Type {
			return old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
		}
	}
	return true
}
