package rbac

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Sync keeps index equal to the stores: it lists each kind, then watches
// it from the list's revision, applying every change as it arrives, and
// lists again when a watch ends or fails (410 Gone after a compaction, a
// restarted etcd). It returns when ctx ends; the index is Synced once all
// four kinds have been listed. Errors are logged and retried.
func Sync(ctx context.Context, s *Stores, index *Index, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	done := make(chan struct{}, 4)
	run := func(f func()) {
		go func() {
			defer func() { done <- struct{}{} }()
			f()
		}()
	}
	run(func() {
		syncKind(ctx, s.Roles, KindRole, index, log, index.replaceRoles, index.PutRole,
			func(r *Role) { index.DeleteRole(r.Namespace, r.Name) })
	})
	run(func() {
		syncKind(ctx, s.ClusterRoles, KindClusterRole, index, log, index.replaceClusterRoles, index.PutClusterRole,
			func(r *ClusterRole) { index.DeleteClusterRole(r.Name) })
	})
	run(func() {
		syncKind(ctx, s.RoleBindings, KindRoleBinding, index, log, index.replaceRoleBindings, index.PutRoleBinding,
			func(b *RoleBinding) { index.DeleteRoleBinding(b.Namespace, b.Name) })
	})
	run(func() {
		syncKind(ctx, s.ClusterRoleBindings, KindClusterRoleBinding, index, log, index.replaceClusterRoleBindings, index.PutClusterRoleBinding,
			func(b *ClusterRoleBinding) { index.DeleteClusterRoleBinding(b.Name) })
	})
	for range 4 {
		<-done
	}
}

// syncKind is Sync's loop for one kind.
func syncKind[T meta.Object](ctx context.Context, st *registry.Store[T], kind string, index *Index, log *slog.Logger,
	replace func([]T), put, remove func(T)) {
	backoff := 100 * time.Millisecond
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
			backoff = min(2*backoff, 5*time.Second)
			return true
		}
	}
	for ctx.Err() == nil {
		rv, err := listInto(ctx, st, replace)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("rbac: listing failed; retrying", "kind", kind, "err", err)
			}
			if !wait() {
				return
			}
			continue
		}
		index.markKindSynced(kind)
		backoff = 100 * time.Millisecond
		events, err := st.Watch(ctx, "", meta.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("rbac: watch failed; listing again", "kind", kind, "err", err)
			}
			if !wait() {
				return
			}
			continue
		}
		for ev := range events {
			switch ev.Type {
			case meta.Added, meta.Modified:
				put(ev.Object)
			case meta.Deleted:
				remove(ev.Object)
			case meta.Error:
				if ctx.Err() == nil {
					log.Info("rbac: watch ended; listing again", "kind", kind, "err", ev.Err)
				}
			}
		}
		// Do not spin on a watch that keeps ending at once.
		if !wait() {
			return
		}
	}
}

// listInto lists every object of a kind, page by page at one revision, and
// hands them to replace; it returns the list's resourceVersion.
func listInto[T meta.Object](ctx context.Context, st *registry.Store[T], replace func([]T)) (string, error) {
	var items []T
	opts := meta.ListOptions{Limit: 500}
	for {
		res, err := st.List(ctx, "", opts)
		if err != nil {
			return "", fmt.Errorf("listing %s: %w", st.Resource(), err)
		}
		for _, e := range res.Items {
			items = append(items, e.Object)
		}
		if res.Continue == "" {
			replace(items)
			return res.ResourceVersion, nil
		}
		opts.Continue = res.Continue
	}
}
