package gc

import (
	"context"
	"log/slog"

	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
)

// HookName is the post-start hook Install adds, as kube-controller-manager
// names the controller.
const HookName = "start-garbage-collector-controller"

// Install adds a post-start hook to srv that runs a Collector, until the
// server stops, over every resource srv and its delegates serve: those
// served when it starts, and those that come and go later (the custom
// resources of an extensions server behind srv, as its CRDs are created
// and deleted), which srv.WatchAPIGroups tells it of. Set srv's
// Config.GarbageCollection too (and the extensions server's), so that
// deletes leave the orphan and foregroundDeletion finalizers for it.
func Install(srv *server.GenericServer, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("hook", HookName)
	return srv.AddPostStartHook(HookName, func(ctx context.Context) error {
		changed := make(chan struct{}, 1)
		stop := srv.WatchAPIGroups(func() {
			select {
			case changed <- struct{}{}:
			default: // one pending rediscovery covers every change before it
			}
		})
		c := New(Config{
			Discover:   func() []registry.Resource { return server.Resources(srv.APIGroups()) },
			Rediscover: changed,
			Complete:   srv.APIGroupsSynced,
			Logger:     logger,
		})
		go func() {
			defer stop()
			c.Run(ctx)
		}()
		return nil
	})
}
