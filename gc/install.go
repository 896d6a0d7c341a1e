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
// and deleted), which srv.WatchAPIGroups tells it of, and those of
// remote (an aggregator's remote APIServices: owners and dependents in
// servers of other processes, read and written through them), followed
// through WatchRemoteResources. Set srv's Config.GarbageCollection too
// (and the extensions server's), so that deletes leave the orphan and
// foregroundDeletion finalizers for it.
func Install(srv *server.GenericServer, logger *slog.Logger, remote ...server.ResourceSource) error {
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("hook", HookName)
	return srv.AddPostStartHook(HookName, func(ctx context.Context) error {
		changed := make(chan struct{}, 1)
		notify := func() {
			select {
			case changed <- struct{}{}:
			default: // one pending rediscovery covers every change before it
			}
		}
		stops := []func(){srv.WatchAPIGroups(notify)}
		for _, r := range remote {
			stops = append(stops, r.WatchRemoteResources(notify))
		}
		c := New(Config{
			Discover: func() []registry.Resource {
				out := server.Resources(srv.APIGroups())
				for _, r := range remote {
					// An unavailable group-version is left out: its
					// objects are neither owners taken for gone (an
					// owner of a kind not collected never is) nor
					// collected until it is back, as kube's collector
					// does with the groups discovery could not reach.
					res, _ := r.RemoteResources()
					out = append(out, res...)
				}
				return out
			},
			Rediscover: changed,
			Complete:   srv.APIGroupsSynced,
			Logger:     logger,
		})
		go func() {
			defer func() {
				for _, stop := range stops {
					stop()
				}
			}()
			c.Run(ctx)
		}()
		return nil
	})
}
