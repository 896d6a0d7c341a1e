// Command aggregated runs an apikit aggregator (server/aggregator) in front
// of the wardle example, started on its own: kubectl talks to the
// aggregator, which authenticates and authorizes each request, then proxies
// wardle.example.com to wardle with its front-proxy certificate and the
// user in X-Remote-* headers. From the repository's root, in two
// terminals:
//
//	go run ./examples/aggregated
//	go run ./examples/wardle --secure-port=8444 \
//	    --requestheader-client-ca-file=.aggregated/pki/front-proxy-ca.crt \
//	    --requestheader-allowed-names=front-proxy-client \
//	    --authentication-kubeconfig=.aggregated/kubeconfig \
//	    --authorization-kubeconfig=.aggregated/kubeconfig \
//	    --authentication-skip-lookup
//
// then
//
//	export KUBECONFIG=$PWD/.aggregated/kubeconfig
//	kubectl get apiservices
//	kubectl get flunders
//
// The aggregator registers wardle's group-versions as APIServices of the
// Service wardle/api, which --service-endpoint (default
// wardle/api=127.0.0.1:8444) places without a cluster, trusting the CA in
// --wardle-ca-file (default .wardle/pki/ca.crt, which wardle makes on its
// first start). See docs/aggregation.md.
package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/examples/wardle/wardleapi"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
)

func main() {
	o := options.NewServerRunOptions()
	o.Aggregator = options.NewAggregatorOptions()
	o.Aggregator.ServiceEndpoints = []string{"wardle/api=127.0.0.1:8444"}
	// Who may read and write flunders is decided here, before proxying:
	// view, edit and admin cover the wardle API in the aggregator too.
	o.Authorization.RBACPolicy.ClusterRoles = append(o.Authorization.RBACPolicy.ClusterRoles, wardleapi.ClusterRoles()...)

	wardleCA := ".wardle/pki/ca.crt"
	extra := pflag.NewFlagSet("wardle", pflag.ContinueOnError)
	extra.StringVar(&wardleCA, "wardle-ca-file", wardleCA,
		"CA bundle of wardle's serving certificate: the APIServices of wardle.example.com (v1beta1, v1alpha1) are registered "+
			"for the Service wardle/api with it as caBundle, as soon as it exists, and updated when it changes. Empty registers nothing.")

	cmd := options.NewServerCommand("aggregated", o, func(c *server.Config) (*server.GenericServer, error) {
		completed, err := c.Complete()
		if err != nil {
			return nil, err
		}
		agg, err := aggregator.New(completed, server.NewEmptyDelegate(), o.Aggregator.Config())
		if err != nil {
			return nil, err
		}
		if wardleCA != "" {
			if err := agg.GenericServer.AddPostStartHook("register-wardle", func(ctx context.Context) error {
				go registerWardle(ctx, agg.Store, wardleCA, c.Logger)
				return nil
			}); err != nil {
				return nil, err
			}
		}
		return agg.GenericServer, nil
	})
	cmd.Flags().AddFlagSet(extra)
	help := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		help(c, args)
		fmt.Fprintf(c.OutOrStdout(), "\nWardle flags:\n\n%s", extra.FlagUsagesWrapped(100))
	})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

// wardleAPIServices are the APIServices of wardle's group-versions, for
// the Service wardle/api (port 443), with caBundle.
func wardleAPIServices(caBundle []byte) []*aggregator.APIService {
	var out []*aggregator.APIService
	for version, priority := range map[string]int32{"v1beta1": 15, "v1alpha1": 10} {
		out = append(out, &aggregator.APIService{
			TypeMeta:   meta.TypeMeta{APIVersion: aggregator.GroupName + "/" + aggregator.Version, Kind: "APIService"},
			ObjectMeta: meta.ObjectMeta{Name: version + "." + wardleapi.GroupName},
			Spec: aggregator.APIServiceSpec{
				Group: wardleapi.GroupName, Version: version, CABundle: caBundle,
				Service:              &aggregator.ServiceReference{Namespace: "wardle", Name: "api"},
				GroupPriorityMinimum: 1000, VersionPriority: priority,
			},
		})
	}
	return out
}

// registerWardle creates or updates wardle's APIServices with the CA in
// caFile, waiting for the file to exist and looking at it every second
// until ctx ends, so that a wardle started later, or with a new CA, is
// registered without a restart.
func registerWardle(ctx context.Context, store *registry.Store[*aggregator.APIService], caFile string, log *slog.Logger) {
	var registered []byte
	waiting := false
	for {
		ca, err := os.ReadFile(caFile)
		switch {
		case err != nil:
			if !waiting {
				log.Info("waiting for wardle's CA to register its APIServices", "file", caFile, "err", err)
				waiting = true
			}
		case !bytes.Equal(ca, registered):
			if err := applyAPIServices(ctx, store, wardleAPIServices(ca)); err != nil {
				log.Warn("registering wardle's APIServices failed; retrying", "err", err)
				break
			}
			log.Info("registered wardle's APIServices", "caFile", caFile)
			registered, waiting = ca, false
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// applyAPIServices creates each APIService, or sets the spec of the one
// there.
func applyAPIServices(ctx context.Context, store *registry.Store[*aggregator.APIService], services []*aggregator.APIService) error {
	for _, s := range services {
		_, err := store.Create(ctx, "", s, registry.WriteOptions{})
		if !meta.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("creating APIService %s: %w", s.Name, err)
			}
			continue
		}
		if _, _, err := store.Update(ctx, "", s.Name, func(_ context.Context, cur *aggregator.APIService) (*aggregator.APIService, error) {
			cur.Spec = s.Spec
			return cur, nil
		}, registry.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating APIService %s: %w", s.Name, err)
		}
	}
	return nil
}
