package options

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/server"
)

// BuildFunc builds the server a command runs. c has the flags applied,
// with c.Storage the storage the flags chose, already open: the function
// makes its stores from c.Storage, adds its admission plugins, completes c,
// creates the server (or a chain of them, with copies of c) and installs
// its API groups. The command runs what it returns.
type BuildFunc func(c *server.Config) (*server.GenericServer, error)

// helpColumns is where --help wraps flag descriptions.
const helpColumns = 100

// NewServerCommand returns the command of a server named name: o's flags
// (with a data directory of ./.<name> unless o names one), --help by
// section, --version, and a run that completes the options (reporting
// every invalid flag at once and exiting non-zero before serving), opens
// the storage, builds the server with build and serves until SIGTERM or
// SIGINT, then shuts down gracefully; a second signal exits at once. At
// --log-level=debug it logs every flag's value first. Its subcommand
// token prints a bearer token for a user (MintUserToken).
//
// Run it with Execute; a non-nil error (already printed) means exit 1.
func NewServerCommand(name string, o *ServerRunOptions, build BuildFunc) *cobra.Command {
	if o.Etcd.DataDir == "" {
		o.Etcd.DataDir = "." + name
	}
	fss := o.Flags()
	global := fss.FlagSet("global")
	global.BoolP("help", "h", false, "help for "+name)
	global.Bool("version", false, "Print version information and quit")

	cmd := &cobra.Command{
		Use:   name,
		Short: name + " serves a Kubernetes-style API",
		Long: name + " serves a Kubernetes-style API: kubectl and client-go talk to it unchanged. " +
			"Its flags are kube-apiserver's, by section.",
		Version:       server.DefaultVersion().GitVersion,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := o.Logs.NewLogger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			slog.SetDefault(logger)
			if o.Logger == nil {
				o.Logger = logger
			}
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				logger.Debug(fmt.Sprintf("FLAG: --%s=%q", f.Name, f.Value.String()))
			})
			ctx, stop := signalContext(cmd.Context(), cmd.ErrOrStderr(), name)
			defer stop()
			completed, err := o.Complete()
			if err != nil {
				return err
			}
			return run(ctx, completed, name, build, cmd.OutOrStdout())
		},
	}
	for _, n := range fss.Order {
		cmd.Flags().AddFlagSet(fss.FlagSets[n])
	}
	cmd.AddCommand(newTokenCommand(name, o))
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		fmt.Fprintf(c.OutOrStderr(), "Usage:\n  %s\n", c.UseLine())
		fss.PrintSections(c.OutOrStderr(), helpColumns)
		return nil
	})
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\nUsage:\n  %s\n%s", c.Long, c.UseLine(), subcommandsHelp(c))
		fss.PrintSections(c.OutOrStdout(), helpColumns)
	})
	return cmd
}

// run is what a server command does once its options are complete.
func run(ctx context.Context, o CompletedOptions, name string, build BuildFunc, out io.Writer) (err error) {
	opts := o.Options()
	st := opts.Etcd.Storage
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing storage: %w", cerr)
		}
	}()
	srv, err := o.NewServer(ctx, name, build)
	if err != nil {
		return err
	}
	if kc := opts.SecureServing.AdminKubeconfig; kc != "" {
		fmt.Fprintf(out, "%s serves %s with data in %s\nPoint kubectl at it:\n\n    export KUBECONFIG=%s\n    kubectl api-resources\n\n",
			name, opts.SecureServing.localURL(), opts.Etcd.DataDir, kc)
	}
	return srv.PrepareRun().Run(ctx)
}

// NewServer is what the command does before it serves: it applies the
// options to a new server.Config, opens the storage, builds the server
// with build and installs the system APIs the flags turned on into it. The
// caller runs the server and closes the storage (Options().Etcd.Storage)
// after it has stopped, also when NewServer fails.
func (c CompletedOptions) NewServer(ctx context.Context, name string, build BuildFunc) (*server.GenericServer, error) {
	cfg := server.NewConfig()
	cfg.OpenAPITitle = name
	if err := c.ApplyTo(cfg); err != nil { // fails on a zero CompletedOptions
		return nil, err
	}
	opts := c.Options()
	st := opts.Etcd.Storage
	if err := st.Open(ctx); err != nil {
		return nil, fmt.Errorf("opening %s storage: %w", st.Backend(), err)
	}
	srv, err := build(cfg)
	if err != nil {
		return nil, err
	}
	if srv == nil {
		return nil, fmt.Errorf("%s: the build function returned no server", name)
	}
	if err := c.InstallSystemAPIs(srv); err != nil {
		return nil, err
	}
	if unknown := opts.APIEnablement.UnknownGroups(); len(unknown) > 0 {
		return nil, fmt.Errorf("--runtime-config: unknown api groups %s", strings.Join(unknown, ","))
	}
	return srv, nil
}

// signalContext ends at the first SIGTERM or SIGINT; a second one exits
// the process at once, with status 1. stop releases the signals.
func signalContext(parent context.Context, stderr io.Writer, name string) (ctx context.Context, stop func()) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	stopped := make(chan struct{})
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case s := <-ch:
			slog.Info("shutting down on signal; a second signal exits at once", "signal", s.String())
			cancel()
		case <-stopped:
			return
		}
		select {
		case <-ch:
			fmt.Fprintf(stderr, "%s: second signal, exiting now\n", name)
			os.Exit(1)
		case <-stopped:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			cancel()
			close(stopped)
		})
	}
}
