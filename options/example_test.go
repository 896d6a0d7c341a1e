package options_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
)

// Widget is an example resource.
type Widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
}

// A server's main: the command parses kube-apiserver's flags, opens the
// storage they choose and calls the build function, which installs the
// server's API, then serves until SIGTERM.
func ExampleNewServerCommand() {
	o := options.NewServerRunOptions() // data in ./.widgets unless --data-dir says otherwise
	o.SecureServing.BindPort = 8444
	cmd := options.NewServerCommand("widgets", o, func(c *server.Config) (*server.GenericServer, error) {
		resource := meta.GroupResource{Group: "example.com", Resource: "widgets"}
		s, err := c.Storage.For(resource)
		if err != nil {
			return nil, err
		}
		widgets, err := registry.NewStore(registry.Options[*Widget]{
			Resource: resource, Kind: "Widget", NamespaceScoped: true, StorageVersion: "v1",
			Strategy: registry.DefaultStrategy[*Widget]{}, Storage: s,
		})
		if err != nil {
			return nil, err
		}
		completed, err := c.Complete()
		if err != nil {
			return nil, err
		}
		srv, err := completed.New("widgets", server.NewEmptyDelegate())
		if err != nil {
			return nil, err
		}
		return srv, srv.InstallAPIGroup(server.NewAPIGroupInfo("example.com").AddVersion("v1", registry.Serve(widgets)))
	})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

// The flow under the command: flags, Complete, ApplyTo.
func ExampleServerRunOptions_Complete() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)

	o := options.NewServerRunOptions()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	fs := pflag.NewFlagSet("example", pflag.ContinueOnError)
	for _, section := range o.Flags().FlagSets {
		fs.AddFlagSet(section)
	}
	_ = fs.Parse([]string{"--data-dir=" + dir, "--storage-backend=memory", "--service-cluster-ip-range=10.96.0.0/12",
		"--watch-cache-sizes=widgets.example.com#100", "--request-timeout=2m"})

	completed, err := o.Complete()
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := server.NewConfig()
	if err := completed.ApplyTo(cfg); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("service IP:", o.ServiceIPRange.APIServerServiceIP)
	fmt.Println("watch cache sizes:", o.Etcd.WatchCacheSizes)
	fmt.Println("external address:", cfg.ExternalAddress)
	fmt.Println("queue wait limit:", cfg.RequestWaitLimit)

	// Output:
	// service IP: 10.96.0.1
	// watch cache sizes: [widgets.example.com#100]
	// external address: 127.0.0.1:8443
	// queue wait limit: 30s
}
