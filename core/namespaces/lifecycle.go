package namespaces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// LifecyclePluginName is the admission plugin's name, kube-apiserver's,
// which --disable-admission-plugins takes.
const LifecyclePluginName = "NamespaceLifecycle"

// The namespaces kube-apiserver creates at start; the first three are
// immortal: NamespaceLifecycle refuses to delete them.
const (
	NamespaceDefault   = "default"
	NamespaceSystem    = "kube-system"
	NamespacePublic    = "kube-public"
	NamespaceNodeLease = "kube-node-lease"
)

// ImmortalNamespaces are the namespaces that may not be deleted.
var ImmortalNamespaces = []string{NamespaceDefault, NamespaceSystem, NamespacePublic}

// SystemNamespaces are the namespaces EnsureSystemNamespaces creates, as
// kube-apiserver's start-system-namespaces-controller does.
var SystemNamespaces = []string{NamespaceSystem, NamespacePublic, NamespaceNodeLease, NamespaceDefault}

// CauseNamespaceTerminating is the Status cause of a create refused because
// its namespace is being deleted (core/v1 NamespaceTerminatingCause).
const CauseNamespaceTerminating = "NamespaceTerminating"

// Lifecycle is kube-apiserver's NamespaceLifecycle admission plugin over
// the namespaces in store: objects may be created and updated only in a
// namespace that exists, created only in one that is not Terminating, and
// the immortal namespaces may not be deleted. Put it in the admission
// chain of every server that serves namespaced resources (it looks names
// up in store, so servers of one process share it). Like kube's, which
// reads an informer and looks a namespace up live only when the informer
// lacks it, it reads the store's watch cache first (see namespace).
func Lifecycle(store *registry.Store[*Namespace]) admission.Plugin {
	return &lifecycle{
		Handler:  admission.Handler{Operations: []admission.Operation{admission.Create, admission.Update, admission.Delete}},
		store:    store,
		immortal: ImmortalNamespaces,
	}
}

type lifecycle struct {
	admission.Handler
	store    *registry.Store[*Namespace]
	immortal []string
}

// Name implements admission.Named.
func (*lifecycle) Name() string { return LifecyclePluginName }

var namespaceKind = meta.GroupKind{Kind: "Namespace"}

// accessReviews may be created in any namespace, existing or not: telling
// a caller that a namespace does not exist would leak its name.
var accessReviews = []meta.GroupResource{{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}}

// Admit implements admission.Mutator: kube runs the plugin as a mutating
// one, so it refuses before any mutating webhook is called.
func (l *lifecycle) Admit(ctx context.Context, a *admission.Attributes) error {
	if err := l.immortalDelete(a); err != nil {
		return err
	}
	if a.Kind.GroupKind() == namespaceKind || a.Namespace == "" || a.Operation == admission.Delete ||
		slices.Contains(accessReviews, a.Resource.GroupResource()) {
		return nil
	}
	ns, err := l.namespace(ctx, a.Namespace)
	if err != nil {
		if meta.IsNotFound(err) {
			// kube's own NotFound: namespaces "x" not found.
			return err
		}
		var se *meta.StatusError
		if errors.As(err, &se) {
			return err
		}
		return meta.NewInternalError(fmt.Errorf("looking up namespace %s: %w", a.Namespace, err))
	}
	if a.Operation != admission.Create || ns.Status.Phase != PhaseTerminating {
		return nil
	}
	forbidden := meta.NewForbidden(a.Resource.GroupResource(), objectName(a),
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	if forbidden.ErrStatus.Details == nil {
		forbidden.ErrStatus.Details = &meta.StatusDetails{}
	}
	forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, meta.StatusCause{
		Type:    CauseNamespaceTerminating,
		Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
		Field:   "metadata.namespace",
	})
	return forbidden
}

// cachedRevision asks for a namespace not older than the first revision:
// the watch cache's copy, with no round trip to etcd.
const cachedRevision = "1"

// namespace reads the namespace name at any revision the store has at
// hand, and consistently only when that finds nothing or fails. A
// consistent read of a cached store waits for etcd's current revision and
// a progress notification on every create: about a fifth of a ConfigMap
// create's CPU (docs/benchmarks.md). The cache serves a read not older
// than the newest write through it, so a namespace created or deleted
// through this server is read as written: kube's wait for a namespace
// just created and its forced live lookup after a delete are not needed.
// A namespace changed by another server on the same etcd is seen once
// the watch cache has the change, as kube's informer sees it.
func (l *lifecycle) namespace(ctx context.Context, name string) (*Namespace, error) {
	if ns, _, err := l.store.Get(ctx, "", name, meta.GetOptions{ResourceVersion: cachedRevision}); err == nil {
		return ns, nil
	}
	ns, _, err := l.store.Get(ctx, "", name, meta.GetOptions{})
	return ns, err
}

// Validate implements admission.Validator: a server runs only validating
// plugins on DELETE, and an immortal namespace must be refused there.
func (l *lifecycle) Validate(_ context.Context, a *admission.Attributes) error {
	return l.immortalDelete(a)
}

func (l *lifecycle) immortalDelete(a *admission.Attributes) error {
	if a.Operation == admission.Delete && a.Kind.GroupKind() == namespaceKind && a.Subresource == "" &&
		slices.Contains(l.immortal, a.Name) {
		return meta.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("this namespace may not be deleted"))
	}
	return nil
}

// objectName is the name kube's admission errors give an object: the
// request's, else the object's name or generateName.
func objectName(a *admission.Attributes) string {
	if a.Name != "" || a.Object == nil {
		return a.Name
	}
	m := a.Object.GetObjectMeta()
	if m.Name != "" {
		return m.Name
	}
	return m.GenerateName
}

// systemNamespacesInterval is how often EnsureSystemNamespaces checks the
// system namespaces again, kube's one minute.
const systemNamespacesInterval = time.Minute

// EnsureSystemNamespaces creates SystemNamespaces in store if they are
// missing, then again every minute until ctx ends, as kube-apiserver's
// start-system-namespaces-controller. It returns once the first round
// succeeded (retrying until then) and leaves a goroutine, stopped by ctx,
// for the later rounds.
func EnsureSystemNamespaces(ctx context.Context, store *registry.Store[*Namespace], logf func(error)) error {
	for {
		err := createSystemNamespaces(ctx, store)
		if err == nil {
			break
		}
		logf(err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	go func() {
		t := time.NewTicker(systemNamespacesInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := createSystemNamespaces(ctx, store); err != nil && ctx.Err() == nil {
					logf(err)
				}
			}
		}
	}()
	return nil
}

func createSystemNamespaces(ctx context.Context, store *registry.Store[*Namespace]) error {
	for _, name := range SystemNamespaces {
		if _, _, err := store.Get(ctx, "", name, meta.GetOptions{}); err == nil {
			continue
		} else if !meta.IsNotFound(err) {
			return fmt.Errorf("reading namespace %s: %w", name, err)
		}
		_, err := store.Create(ctx, "", &Namespace{ObjectMeta: meta.ObjectMeta{Name: name}}, registry.WriteOptions{})
		if err != nil && !meta.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}
