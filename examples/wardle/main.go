// Command wardle serves the API of the Kubernetes sample-apiserver
// (wardle.example.com: Flunder and Fischer) with apikit, on an embedded etcd
// by default. On first start it makes a CA, a serving certificate and an
// admin client certificate under --data-dir and writes a kubeconfig there.
//
//	go run ./examples/wardle
//	export KUBECONFIG=$PWD/.wardle/kubeconfig
//	kubectl get flunders
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/examples/wardle/wardleapi"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wardle:", err)
		os.Exit(1)
	}
}

type flags struct {
	bindAddress string
	securePort  int
	dataDir     string
	backend     string
	etcdServers []string
	etcdPrefix  string
}

func run() error {
	var f flags
	fs := pflag.NewFlagSet("wardle", pflag.ContinueOnError)
	fs.StringVar(&f.bindAddress, "bind-address", "127.0.0.1", "The IP address on which to listen for the --secure-port port.")
	fs.IntVar(&f.securePort, "secure-port", 8443, "The port on which to serve HTTPS with authentication and authorization.")
	fs.StringVar(&f.dataDir, "data-dir", ".wardle", "Directory for the embedded etcd's data, the generated certificates and the kubeconfig.")
	fs.StringVar(&f.backend, "storage-backend", "embedded", "Storage: embedded (in-process etcd under --data-dir), etcd3 (--etcd-servers) or memory (lost on exit).")
	fs.StringSliceVar(&f.etcdServers, "etcd-servers", nil, "etcd servers to use (scheme://ip:port, comma separated); implies --storage-backend=etcd3.")
	fs.StringVar(&f.etcdPrefix, "etcd-prefix", "/registry", "The prefix of every etcd key.")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if len(f.etcdServers) > 0 && !fs.Changed("storage-backend") {
		f.backend = "etcd3"
	}

	ctx, stop := signalContext()
	defer stop()

	dataDir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return err
	}
	store, closeStore, err := openStorage(ctx, f, dataDir)
	if err != nil {
		return err
	}
	defer closeStore()

	pki, err := certs.Bootstrap(dataDir, f.bindAddress, f.securePort)
	if err != nil {
		return err
	}

	api, err := wardleapi.New(store)
	if err != nil {
		return err
	}
	cfg := server.NewConfig()
	cfg.SecureServing.BindAddress = f.bindAddress
	cfg.SecureServing.Port = f.securePort
	cfg.SecureServing.Certificate = &pki.Serving
	cfg.SecureServing.ClientCA = authn.StaticCAs{Pool: pki.ClientCAs}
	cfg.Admission = append(cfg.Admission, api.BanFlunder())
	cfg.OpenAPITitle = "wardle"
	completed, err := cfg.Complete()
	if err != nil {
		return err
	}
	srv, err := completed.New("wardle", server.NewEmptyDelegate())
	if err != nil {
		return err
	}
	group, err := api.GroupInfo()
	if err != nil {
		return err
	}
	if err := srv.InstallAPIGroup(group); err != nil {
		return err
	}
	fmt.Printf("wardle serves https://%s with data in %s\nPoint kubectl at it:\n\n    export KUBECONFIG=%s\n    kubectl get flunders\n\n",
		net.JoinHostPort(f.bindAddress, strconv.Itoa(f.securePort)), dataDir, pki.Kubeconfig)
	return srv.PrepareRun().Run(ctx)
}

// signalContext ends at the first SIGTERM or SIGINT; a second one exits at once.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
			return
		}
		<-ch
		fmt.Fprintln(os.Stderr, "wardle: second signal, exiting now")
		os.Exit(1)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

func openStorage(ctx context.Context, f flags, dataDir string) (storage.Interface, func(), error) {
	switch f.backend {
	case "memory":
		s := memory.New()
		return s, func() { _ = s.Close() }, nil
	default:
		return nil, nil, fmt.Errorf("--storage-backend=%q is not supported; use embedded, etcd3 or memory", f.backend)
	}
}
