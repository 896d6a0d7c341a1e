// Package nsdeletion is kube-controller-manager's namespace controller over
// a server's own stores: a namespace marked for deletion (Terminating) has
// every object of every namespaced resource it is given deleted, its
// status conditions set in kube's words, and, once nothing is left, the
// "kubernetes" finalizer removed through finalize, which deletes it.
package nsdeletion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
)

// Content is one namespaced resource whose objects a namespace's deletion
// deletes.
type Content interface {
	// Resource names it in conditions.
	Resource() meta.GroupResource
	// DeleteAll deletes the objects in ns and reports how many are left
	// (deleted but kept by finalizers, or written meanwhile) and the
	// finalizers those hold.
	DeleteAll(ctx context.Context, ns string) (remaining int, finalizers []string, err error)
}

// Store is a Content over a registry store.
func Store[T meta.Object](s *registry.Store[T]) Content { return Resource(registry.Serve(s)) }

// Resource is a Content over a served resource: a built-in's, or a custom
// resource's of an extensions server.
func Resource(res registry.Resource) Content { return resourceContent{res: res} }

// Remote is a Content over a resource served by another process (an
// aggregator's remote APIService): as kube's namespace controller does,
// one deletecollection of the namespace's objects where the resource
// serves it, then a list, deleting one by one what is left unmarked, so
// that a backend with many objects costs one request, not one per
// object.
func Remote(res registry.Resource) Content { return resourceContent{res: res, collection: true} }

type resourceContent struct {
	res registry.Resource
	// collection says DeleteAll starts with a deletecollection.
	collection bool
}

func (c resourceContent) Resource() meta.GroupResource {
	info := c.res.Info()
	return meta.GroupResource{Group: info.GroupVersion.Group, Resource: info.Resource}
}

func (c resourceContent) DeleteAll(ctx context.Context, ns string) (int, []string, error) {
	gr := c.Resource()
	background := meta.DeletePropagationBackground
	if c.collection && c.res.Info().Serves("deletecollection") {
		if _, err := c.res.DeleteCollection(ctx, ns, meta.ListOptions{}, registry.DeleteOptions{PropagationPolicy: &background}); err != nil {
			return 0, nil, fmt.Errorf("deleting the collection of %s in %s: %w", gr, ns, err)
		}
	}
	list, err := c.res.List(ctx, ns, meta.ListOptions{})
	if err != nil {
		return 0, nil, fmt.Errorf("listing %s: %w", gr, err)
	}
	remaining := 0
	var finalizers []string
	for _, it := range list.Items {
		obj, err := it.Object()
		if err != nil {
			return 0, nil, fmt.Errorf("decoding %s in %s: %w", gr, ns, err)
		}
		m := obj.GetObjectMeta()
		if m.DeletionTimestamp == nil {
			left, deleted, err := c.res.Delete(ctx, ns, m.Name, registry.DeleteOptions{})
			if meta.IsNotFound(err) {
				continue
			}
			if err != nil {
				return 0, nil, fmt.Errorf("deleting %s %s/%s: %w", gr, ns, m.Name, err)
			}
			if deleted {
				continue
			}
			if obj, err = left.Object(); err != nil {
				return 0, nil, fmt.Errorf("decoding %s %s/%s: %w", gr, ns, m.Name, err)
			}
			m = obj.GetObjectMeta()
		}
		remaining++
		for _, f := range m.Finalizers {
			if !slices.Contains(finalizers, f) {
				finalizers = append(finalizers, f)
			}
		}
	}
	return remaining, finalizers, nil
}

// Config is what the controller works on.
type Config struct {
	Namespaces *registry.Store[*namespaces.Namespace]
	// Content are namespaced resources whose objects a namespace's
	// deletion deletes.
	Content []Content
	// Discover, when set, is called on every pass over a namespace, as
	// kube's namespace controller rediscovers the resources each time:
	// the Content it returns is deleted too (a resource in both, once),
	// so resources that came after the start (custom resources) are. An
	// error says the list may miss some (a server of the chain has not
	// yet served the custom resources it stored): what it returned is
	// deleted, the error is the NamespaceDeletionDiscoveryFailure
	// condition's message, and the namespace is kept until a pass
	// without one.
	Discover func() ([]Content, error)
	// Log receives failures; nil is slog.Default().
	Log *slog.Logger
	// Resync is how often a Terminating namespace with content left is
	// looked at again; 0 is 5 s.
	Resync time.Duration
}

// Condition types and reasons, kube's.
const (
	ConditionDiscoveryFailure    = "NamespaceDeletionDiscoveryFailure"
	ConditionGroupVersionParsing = "NamespaceDeletionGroupVersionParsingFailure"
	ConditionContentFailure      = "NamespaceDeletionContentFailure"
	ConditionContentRemaining    = "NamespaceContentRemaining"
	ConditionFinalizersRemaining = "NamespaceFinalizersRemaining"
)

// Run deletes Terminating namespaces' content until ctx ends.
func Run(ctx context.Context, c Config) {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Resync <= 0 {
		c.Resync = 5 * time.Second
	}
	var mu sync.Mutex
	pending := map[string]bool{}
	signal := make(chan struct{}, 1)
	add := func(ns string) {
		mu.Lock()
		pending[ns] = true
		mu.Unlock()
		select {
		case signal <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			events, err := c.Namespaces.Watch(ctx, "", meta.ListOptions{})
			if err == nil {
				for e := range events {
					if (e.Type == meta.Added || e.Type == meta.Modified) && e.Object.DeletionTimestamp != nil {
						add(e.Object.Name)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	defer func() { <-done }()
	tick := time.NewTicker(c.Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-signal:
		case <-tick.C:
		}
		mu.Lock()
		names := make([]string, 0, len(pending))
		for ns := range pending {
			names = append(names, ns)
		}
		clear(pending)
		mu.Unlock()
		for _, ns := range names {
			again, err := c.sync(ctx, ns)
			if err != nil && ctx.Err() == nil {
				c.Log.Error("deleting a namespace's content", "namespace", ns, "err", err)
			}
			if again || err != nil {
				// Looked at again at the next tick.
				mu.Lock()
				pending[ns] = true
				mu.Unlock()
			}
		}
	}
}

// sync deletes ns's content; again says content is left.
func (c *Config) sync(ctx context.Context, ns string) (again bool, err error) {
	n, _, err := c.Namespaces.Get(ctx, "", ns, meta.GetOptions{})
	if meta.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	if n.DeletionTimestamp == nil || !slices.Contains(n.Spec.Finalizers, namespaces.FinalizerKubernetes) {
		return false, nil
	}
	content := c.Content
	var discoveryErr error
	if c.Discover != nil {
		var found []Content
		found, discoveryErr = c.Discover()
		content = union(content, found)
	}
	var failures []string
	remaining := map[string]int{}
	finalizers := map[string]int{}
	total := 0
	for _, r := range content {
		left, fins, err := r.DeleteAll(ctx, ns)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		if left > 0 {
			remaining[r.Resource().String()] += left
			total += left
			for _, f := range fins {
				finalizers[f] += left
			}
		}
	}
	conds := []namespaces.NamespaceCondition{
		{Type: ConditionDiscoveryFailure, Status: "False", Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: ConditionGroupVersionParsing, Status: "False", Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
	}
	if discoveryErr != nil {
		conds[0] = namespaces.NamespaceCondition{Type: ConditionDiscoveryFailure, Status: "True", Reason: "DiscoveryFailed", Message: discoveryErr.Error()}
	}
	if len(failures) > 0 {
		sort.Strings(failures)
		conds = append(conds, namespaces.NamespaceCondition{Type: ConditionContentFailure, Status: "True", Reason: "ContentDeletionFailed",
			Message: "Failed to delete all resource types, " + fmt.Sprint(len(failures)) + " remaining: " + strings.Join(failures, ", ")})
	} else {
		conds = append(conds, namespaces.NamespaceCondition{Type: ConditionContentFailure, Status: "False", Reason: "ContentDeleted",
			Message: "All content successfully deleted, may be waiting on finalization"})
	}
	if total > 0 {
		conds = append(conds, namespaces.NamespaceCondition{Type: ConditionContentRemaining, Status: "True", Reason: "SomeResourcesRemain",
			Message: "Some resources are remaining: " + counts(remaining, " has %d resource instances")})
	} else {
		conds = append(conds, namespaces.NamespaceCondition{Type: ConditionContentRemaining, Status: "False", Reason: "ContentRemoved",
			Message: "All content successfully removed"})
	}
	if len(finalizers) > 0 {
		conds = append(conds, namespaces.NamespaceCondition{Type: ConditionFinalizersRemaining, Status: "True", Reason: "SomeFinalizersRemain",
			Message: "Some content in the namespace has finalizers remaining: " + counts(finalizers, " in %d resource instances")})
	} else {
		conds = append(conds, namespaces.NamespaceCondition{Type: ConditionFinalizersRemaining, Status: "False", Reason: "ContentHasNoFinalizers",
			Message: "All content-preserving finalizers finished"})
	}
	if err := c.setConditions(ctx, ns, conds); err != nil {
		return true, err
	}
	if len(failures) > 0 || total > 0 || discoveryErr != nil {
		return true, nil
	}
	_, _, err = c.Namespaces.Update(ctx, "", ns, func(_ context.Context, cur *namespaces.Namespace) (*namespaces.Namespace, error) {
		cur.Spec.Finalizers = slices.DeleteFunc(cur.Spec.Finalizers, func(f string) bool { return f == namespaces.FinalizerKubernetes })
		return cur, nil
	}, registry.UpdateOptions{Subresource: "finalize"})
	if err != nil && !meta.IsNotFound(err) {
		return true, fmt.Errorf("finalizing namespace %s: %w", ns, err)
	}
	return false, nil
}

// union is a's content and then b's of resources a does not have.
func union(a, b []Content) []Content {
	seen := make(map[meta.GroupResource]bool, len(a)+len(b))
	out := make([]Content, 0, len(a)+len(b))
	for _, c := range append(slices.Clip(a), b...) {
		if gr := c.Resource(); !seen[gr] {
			seen[gr] = true
			out = append(out, c)
		}
	}
	return out
}

// counts is "a has 2 resource instances, b has 1 resource instances" in
// kube's order (sorted).
func counts(m map[string]int, format string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + fmt.Sprintf(format, m[k])
	}
	return strings.Join(parts, ", ")
}

func (c *Config) setConditions(ctx context.Context, ns string, conds []namespaces.NamespaceCondition) error {
	_, _, err := c.Namespaces.Update(ctx, "", ns, func(_ context.Context, cur *namespaces.Namespace) (*namespaces.Namespace, error) {
		now := meta.NewTime(time.Now().UTC().Truncate(time.Second))
		out := make([]namespaces.NamespaceCondition, 0, len(conds))
		for _, nc := range conds {
			nc.LastTransitionTime = &now
			for _, old := range cur.Status.Conditions {
				if old.Type == nc.Type && old.Status == nc.Status && old.Reason == nc.Reason && old.Message == nc.Message {
					nc.LastTransitionTime = old.LastTransitionTime
				}
			}
			out = append(out, nc)
		}
		cur.Status.Conditions = out
		return cur, nil
	}, registry.UpdateOptions{Subresource: "status"})
	if err != nil && !meta.IsNotFound(err) {
		return fmt.Errorf("setting namespace %s's conditions: %w", ns, err)
	}
	return nil
}

// errNotSynced is the discovery failure while a server of the chain has
// not yet served the resources it stored.
var errNotSynced = errors.New("unable to retrieve the complete list of server APIs: the custom resources stored are not yet served")

// Served discovers every namespaced resource srv and the servers behind it
// serve now (server.Resources of APIGroups: built-ins, and custom
// resources of an extensions server while their CRDs are), and those of
// remote (an aggregator's remote APIServices, served by other processes),
// one version of each, for Config.Discover. The error is kube's discovery
// failure: while srv.APIGroupsSynced is false, or while a remote
// group-version is unavailable (its objects cannot be known to be gone,
// so the namespace stays Terminating).
func Served(srv server.DelegationTarget, remote ...server.ResourceSource) func() ([]Content, error) {
	deletable := func(info registry.ResourceInfo) bool {
		return info.NamespaceScoped && info.Serves("list") && info.Serves("delete")
	}
	return func() ([]Content, error) {
		var errs []error
		if !srv.APIGroupsSynced() {
			errs = append(errs, errNotSynced)
		}
		var out []Content
		for _, res := range server.Resources(srv.APIGroups()) {
			if deletable(res.Info()) {
				out = append(out, Resource(res))
			}
		}
		for _, r := range remote {
			found, err := r.RemoteResources()
			if err != nil {
				errs = append(errs, err)
			}
			for _, res := range found {
				if deletable(res.Info()) {
					out = append(out, Remote(res))
				}
			}
		}
		return union(nil, out), discoveryError(errs)
	}
}

// discoveryError is the message of NamespaceDeletionDiscoveryFailure for
// errs: kube's "Discovery failed for some groups, N failing: ..." when
// they name failed group-versions.
func discoveryError(errs []error) error {
	failed := 0
	for _, err := range errs {
		var de interface{ FailedGroupVersions() int }
		if !errors.As(err, &de) {
			return errors.Join(errs...)
		}
		failed += de.FailedGroupVersions()
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("Discovery failed for some groups, %d failing: %w", failed, errors.Join(errs...))
}
