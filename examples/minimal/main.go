// Command minimal is a complete apikit server with one resource, Widget, in
// under 100 lines: run it, export the KUBECONFIG it prints, use kubectl.
package main

import (
	"context"
	"os"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/options"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
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
	o := options.NewServerRunOptions() // kube-apiserver's flags; data in ./.minimal
	o.SecureServing.BindPort = 8444
	if err := options.NewServerCommand("minimal", o, build).Execute(); err != nil {
		os.Exit(1)
	}
}

// build installs the widgets on the server the flags configured.
func build(c *server.Config) (*server.GenericServer, error) {
	resource := meta.GroupResource{Group: "example.com", Resource: "widgets"}
	s, err := c.Storage.For(resource)
	if err != nil {
		return nil, err
	}
	widgets, err := registry.NewStore(registry.Options[*Widget]{
		Resource:          resource,
		Kind:              "Widget",
		NamespaceScoped:   true,
		StorageVersion:    "v1",
		StatusSubresource: true,
		Strategy:          strategy{},
		Storage:           s,
	})
	if err != nil {
		return nil, err
	}
	completed, err := c.Complete()
	if err != nil {
		return nil, err
	}
	srv, err := completed.New("minimal", server.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	return srv, srv.InstallAPIGroup(server.NewAPIGroupInfo("example.com").AddVersion("v1", registry.Serve(widgets)))
}
