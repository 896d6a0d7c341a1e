package namespaces

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Lister answers admission's namespace lookups (the namespaceSelectors of
// webhooks and policies) from an informer over the namespaces store, as
// kube-apiserver's admission plugins read its namespace lister. A name
// the informer does not have (a namespace created a moment ago, whose
// event is still on its way, or an informer not running or not synced)
// is read live from the store, as kube falls back to a live GET when the
// lister misses.
type Lister struct {
	store    *registry.Store[*Namespace]
	informer *informer.Informer[*Namespace]
}

// NewLister returns a Lister of store; it reads the store live until Run.
func NewLister(store *registry.Store[*Namespace]) *Lister {
	return &Lister{store: store, informer: informer.New(informer.Config[*Namespace]{
		Source: store, Name: "namespaces", Logger: slog.Default().With("informer", "admission-namespaces")})}
}

// Run keeps the informer until ctx ends.
func (l *Lister) Run(ctx context.Context) { l.informer.Run(ctx) }

// Get returns the namespace name: the informer's copy, else the store's.
// A namespace that does not exist is meta.IsNotFound, kube's
// `namespaces "x" not found`. The object is shared: do not change it.
func (l *Lister) Get(ctx context.Context, name string) (*Namespace, error) {
	if ns, ok := l.informer.Get("", name); ok {
		return ns, nil
	}
	ns, _, err := l.store.Get(ctx, "", name, meta.GetOptions{})
	if err != nil {
		var se *meta.StatusError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fmt.Errorf("getting namespace %q: %w", name, err)
	}
	return ns, nil
}

// NamespaceLabels returns the labels of the namespace name (the webhook
// and policy plugins' lookup, admission.NamespaceLabels).
func (l *Lister) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	ns, err := l.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return ns.Labels, nil
}
