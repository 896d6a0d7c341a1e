package options

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/tracing"
)

// TracingOptions turn on OpenTelemetry tracing, as kube-apiserver's
// --tracing-config-file does.
type TracingOptions struct {
	// ConfigFile is a TracingConfiguration file; empty traces nothing.
	ConfigFile string
	// ServiceName names the server in its traces; kube-apiserver's is
	// "apiserver". Not a flag.
	ServiceName string

	provider *sdktrace.TracerProvider
}

// NewTracingOptions returns the defaults: no tracing.
func NewTracingOptions() *TracingOptions { return &TracingOptions{ServiceName: "apiserver"} }

// AddFlags adds --tracing-config-file.
func (o *TracingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "tracing-config-file", o.ConfigFile,
		"File with apiserver tracing configuration (kube's TracingConfiguration: the OTLP gRPC endpoint, default localhost:4317, and samplingRatePerMillion).")
}

// Complete reads the configuration file and makes the TracerProvider; its
// exporter connects when it first sends.
func (o *TracingOptions) Complete(log *slog.Logger) error {
	if o.ConfigFile == "" {
		return nil
	}
	cfg, err := tracing.ReadConfigurationFile(o.ConfigFile)
	if err != nil {
		return fmt.Errorf("--tracing-config-file: %w", err)
	}
	if o.provider, err = tracing.NewProvider(context.Background(), cfg, o.ServiceName); err != nil {
		return fmt.Errorf("--tracing-config-file: %w", err)
	}
	log.Info("tracing requests", "endpoint", *cfgEndpoint(cfg), "samplingRatePerMillion", cfg.SamplingRatePerMillion)
	return nil
}

func cfgEndpoint(c *tracing.Configuration) *string {
	if c.Endpoint == nil || *c.Endpoint == "" {
		e := tracing.DefaultEndpoint
		return &e
	}
	return c.Endpoint
}

// ApplyTo sets the server's TracerProvider.
func (o *TracingOptions) ApplyTo(c *server.Config) error {
	if o.provider != nil {
		c.TracerProvider = o.provider
	}
	return nil
}

// InstallSystemAPIs shuts the provider down, sending the spans still
// queued, once the server has stopped.
func (o *TracingOptions) InstallSystemAPIs(s *server.GenericServer) error {
	p := o.provider
	if p == nil {
		return nil
	}
	return s.AddPostStartHook("tracing-shutdown", func(ctx context.Context) error {
		go func() {
			<-ctx.Done()
			flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := p.Shutdown(flush); err != nil {
				slog.Warn("shutting down tracing", "err", err)
			}
		}()
		return nil
	})
}
