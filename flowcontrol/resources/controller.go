package resources

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// EnsurePeriod is how often Run reconciles the default configuration, as
// kube-apiserver does (and at once when a mandatory object disappears).
const EnsurePeriod = time.Minute

// Run keeps apf in step with the stored configuration until ctx ends: an
// informer of each resource follows the stored objects, and after every
// change (once both have listed) Run applies the configuration to apf,
// keeps each FlowSchema's Dangling condition and restores deleted
// mandatory objects; it ensures the defaults (see Ensure) every
// EnsurePeriod. Failures are logged and retried; Run returns when ctx
// ends.
func (a *API) Run(ctx context.Context, apf *flowcontrol.APF, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	// changed holds at most one pending change: a burst of changes costs
	// one reconcile of the state after it.
	changed := make(chan struct{}, 1)
	fsInf := newInformer(a.FlowSchemas, "flowschemas", log, changed)
	plInf := newInformer(a.PriorityLevels, "prioritylevelconfigurations", log, changed)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { fsInf.Run(ctx) })
	wg.Go(func() { plInf.Run(ctx) })
	if fsInf.WaitForSync(ctx) != nil || plInf.WaitForSync(ctx) != nil {
		return
	}
	ensureTick := time.NewTicker(EnsurePeriod)
	defer ensureTick.Stop()
	a.reconcile(ctx, apf, newConfigState(fsInf.List(), plInf.List()), log)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ensureTick.C:
			// What Ensure writes comes back as changes.
			if err := a.Ensure(ctx); err != nil && ctx.Err() == nil {
				log.Warn("priority and fairness: ensuring the default configuration", "err", err)
			}
		case <-changed:
			a.reconcile(ctx, apf, newConfigState(fsInf.List(), plInf.List()), log)
		}
	}
}

// newInformer returns an informer of one resource that signals changed on
// every change.
func newInformer[T meta.Object](st *registry.Store[T], name string, log *slog.Logger, changed chan<- struct{}) *informer.Informer[T] {
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	return informer.New(informer.Config[T]{
		Source: st,
		Name:   "priority and fairness " + name,
		Logger: log,
		Handlers: informer.Handlers[T]{
			OnAdd:    func(T) { notify() },
			OnUpdate: func(_, _ T) { notify() },
			OnDelete: func(T) { notify() },
		},
	})
}

// configState is what the controller has seen of the stored objects.
type configState struct {
	fs map[string]*flowSchema
	pl map[string]*priorityLevel
}

func newConfigState(schemas []*flowSchema, levels []*priorityLevel) *configState {
	st := &configState{fs: make(map[string]*flowSchema, len(schemas)), pl: make(map[string]*priorityLevel, len(levels))}
	for _, fs := range schemas {
		st.fs[fs.Name] = fs
	}
	for _, pl := range levels {
		st.pl[pl.Name] = pl
	}
	return st
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
