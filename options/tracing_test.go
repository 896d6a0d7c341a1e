package options

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/server"
)

func TestTracingOptions(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, file, wantErr string
		wantProvider        bool
	}{
		{name: "no file, no tracing"},
		{name: "valid", file: write("ok.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:4317\n"), wantProvider: true},
		{name: "missing file", file: filepath.Join(dir, "absent.yaml"), wantErr: "--tracing-config-file: reading tracing configuration"},
		{name: "invalid rate", file: write("bad.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n"), wantErr: "--tracing-config-file: samplingRatePerMillion: Invalid value: 2000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewTracingOptions()
			o.ConfigFile = tt.file
			err := o.Complete(slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := &server.Config{}
			if err := o.ApplyTo(cfg); err != nil {
				t.Fatal(err)
			}
			if got := cfg.TracerProvider != nil; got != tt.wantProvider {
				t.Fatalf("TracerProvider set: %v, want %v", got, tt.wantProvider)
			}
			if o.provider != nil {
				if err := o.provider.Shutdown(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
