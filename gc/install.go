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
// server stops, over every resource srv and its delegates serve when it
// starts. Set srv's Config.GarbageCollection too, so that deletes leave the
// orphan and foregroundDeletion finalizers for it. Resources that appear
// later (custom resources of CRDs created afterwards) are not collected.
func Install(srv *server.GenericServer, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("hook", HookName)
	return srv.AddPostStartHook(HookName, func(ctx context.Context) error {
		var resources []registry.Resource
		for _, g := range srv.APIGroups() {
			for _, v := range g.Versions {
				resources = append(resources, v.Resources...)
			}
		}
		go New(Config{Resources: resources, Logger: logger}).Run(ctx)
		return nil
	})
}
