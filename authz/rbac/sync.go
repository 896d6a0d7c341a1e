package rbac

import (
	"context"
	"log/slog"
	"sync"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Sync keeps index equal to the stores through one informer per kind: each
// lists its kind, watches it from the list's revision and applies every
// change as it arrives, resuming a watch that ends and listing again when
// its revision is gone (410 Gone after a compaction). It returns when ctx
// ends; the index is Synced once all four kinds have been listed. Errors
// are logged and retried.
func Sync(ctx context.Context, s *Stores, index *Index, log *slog.Logger) {
	var wg sync.WaitGroup
	wg.Go(func() {
		syncKind(ctx, &wg, s.Roles, KindRole, index, log, index.PutRole,
			func(r *Role) { index.DeleteRole(r.Namespace, r.Name) })
	})
	wg.Go(func() {
		syncKind(ctx, &wg, s.ClusterRoles, KindClusterRole, index, log, index.PutClusterRole,
			func(r *ClusterRole) { index.DeleteClusterRole(r.Name) })
	})
	wg.Go(func() {
		syncKind(ctx, &wg, s.RoleBindings, KindRoleBinding, index, log, index.PutRoleBinding,
			func(b *RoleBinding) { index.DeleteRoleBinding(b.Namespace, b.Name) })
	})
	wg.Go(func() {
		syncKind(ctx, &wg, s.ClusterRoleBindings, KindClusterRoleBinding, index, log, index.PutClusterRoleBinding,
			func(b *ClusterRoleBinding) { index.DeleteClusterRoleBinding(b.Name) })
	})
	wg.Wait()
}

// syncKind runs the informer of one kind until ctx ends; a goroutine of
// wg marks the kind synced after its first list.
func syncKind[T meta.Object](ctx context.Context, wg *sync.WaitGroup, st *registry.Store[T], kind string, index *Index, log *slog.Logger,
	put, remove func(T)) {
	inf := informer.New(informer.Config[T]{
		Source: st,
		Name:   "rbac " + kind,
		Logger: log,
		Handlers: informer.Handlers[T]{
			OnAdd:    put,
			OnUpdate: func(_, obj T) { put(obj) },
			OnDelete: remove,
		},
	})
	wg.Go(func() {
		select {
		case <-inf.Synced():
			index.markKindSynced(kind)
		case <-ctx.Done():
		}
	})
	inf.Run(ctx)
}
