// Command minimal is a complete apikit server with one resource, Widget, in
// under 100 lines: run it, export the KUBECONFIG it prints, use kubectl.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Widget is the server's one resource: a plain Go struct.
type Widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            WidgetSpec   `json:"spec,omitempty"`
	Status          WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is what the user asks for.
type WidgetSpec struct {
	Color string `json:"color,omitempty" description:"The widget's colour."`
	Size  int    `json:"size,omitempty" description:"The widget's size; never negative."`
}

// WidgetStatus is what a controller reports, through widgets/status.
type WidgetStatus struct {
	Ready bool `json:"ready,omitempty" description:"Whether the widget is ready."`
}

// strategy validates widgets; the generic store does everything else.
type strategy struct {
	registry.DefaultStrategy[*Widget]
}

func (strategy) Validate(_ context.Context, w *Widget) meta.FieldErrors {
	if w.Spec.Size < 0 {
		return meta.FieldErrors{meta.Invalid(meta.NewPath("spec", "size"), w.Spec.Size, "must be greater than or equal to 0")}
	}
	return nil
}

func (s strategy) ValidateUpdate(ctx context.Context, w, _ *Widget) meta.FieldErrors {
	return s.Validate(ctx, w)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	widgets, err := registry.NewStore(registry.Options[*Widget]{
		Resource:          meta.GroupResource{Group: "example.com", Resource: "widgets"},
		Kind:              "Widget",
		NamespaceScoped:   true,
		StorageVersion:    "v1",
		StatusSubresource: true,
		Strategy:          strategy{},
		Storage:           memory.New(),
	})
	if err != nil {
		return err
	}
	// A CA, a serving cert, an admin client cert and a kubeconfig, made once.
	pki, err := certs.Bootstrap(".minimal", "127.0.0.1", 8444)
	if err != nil {
		return err
	}
	cfg := server.NewConfig()
	cfg.SecureServing.Port = 8444
	cfg.SecureServing.Certificate = &pki.Serving
	cfg.SecureServing.ClientCA = authn.StaticCAs{Pool: pki.ClientCAs}
	completed, err := cfg.Complete()
	if err != nil {
		return err
	}
	srv, err := completed.New("minimal", server.NewEmptyDelegate())
	if err != nil {
		return err
	}
	if err := srv.InstallAPIGroup(server.NewAPIGroupInfo("example.com").AddVersion("v1", registry.Serve(widgets))); err != nil {
		return err
	}
	fmt.Printf("serving https://127.0.0.1:8444\n\n    export KUBECONFIG=%s\n    kubectl get widgets\n\n", pki.Kubeconfig)
	return srv.PrepareRun().Run(ctx)
}
