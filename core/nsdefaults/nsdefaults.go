// Package nsdefaults keeps in every namespace what kube-controller-manager's
// serviceaccount and root-ca-cert-publisher controllers keep there: the
// `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap, whose
// ca.crt is the CA clients verify the server with. Either is put back when
// deleted, and the ConfigMap's data and description when edited.
// Namespaces being deleted are left alone.
package nsdefaults

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/core/namespaces"
	"github.com/apikit-dev/apikit/core/serviceaccounts"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// Names and annotation of the objects kept, kube's.
const (
	ServiceAccountName = "default"
	RootCAConfigMap    = "kube-root-ca.crt"
	RootCAKey          = "ca.crt"
	// DescriptionAnnotation describes the ConfigMap, in kube's words.
	DescriptionAnnotation = "kubernetes.io/description"
	description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Config says which stores to keep the objects in.
type Config struct {
	Namespaces      *registry.Store[*namespaces.Namespace]
	ServiceAccounts *registry.Store[*serviceaccounts.ServiceAccount]
	ConfigMaps      *registry.Store[*configmaps.ConfigMap]
	// RootCA is the PEM bundle published as ca.crt; empty publishes no
	// ConfigMap (a server given its certificate knows no CA).
	RootCA []byte
	// Log receives failures, which are retried; nil is slog.Default().
	Log *slog.Logger
}

// retryDelay is how long a namespace waits after a failed sync.
const retryDelay = time.Second

// Run keeps the objects until ctx ends. It watches namespaces,
// serviceaccounts and configmaps and syncs each namespace an event
// concerns; a watch that ends is started again (its initial events
// resync every namespace).
func Run(ctx context.Context, c Config) {
	if c.Log == nil {
		c.Log = slog.Default()
	}
	q := &queue{pending: map[string]bool{}, signal: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(3)
	go func() {
		defer wg.Done()
		watch(ctx, c.Log, c.Namespaces, func(e registry.Event[*namespaces.Namespace]) {
			if e.Type != meta.Deleted {
				q.add(e.Object.Name)
			}
		})
	}()
	go func() {
		defer wg.Done()
		watch(ctx, c.Log, c.ServiceAccounts, func(e registry.Event[*serviceaccounts.ServiceAccount]) {
			if e.Object.Name == ServiceAccountName && e.Type == meta.Deleted {
				q.add(e.Object.Namespace)
			}
		})
	}()
	go func() {
		defer wg.Done()
		watch(ctx, c.Log, c.ConfigMaps, func(e registry.Event[*configmaps.ConfigMap]) {
			if e.Object.Name == RootCAConfigMap {
				q.add(e.Object.Namespace)
			}
		})
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.signal:
		}
		for _, ns := range q.take() {
			if err := c.sync(ctx, ns); err != nil && ctx.Err() == nil {
				c.Log.Error("keeping a namespace's default objects", "namespace", ns, "err", err)
				wg.Add(1)
				go func() {
					defer wg.Done()
					select {
					case <-ctx.Done():
					case <-time.After(retryDelay):
						q.add(ns)
					}
				}()
			}
		}
	}
}

// queue is the set of namespaces to sync.
type queue struct {
	mu      sync.Mutex
	pending map[string]bool
	signal  chan struct{}
}

func (q *queue) add(ns string) {
	q.mu.Lock()
	q.pending[ns] = true
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *queue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, 0, len(q.pending))
	for ns := range maps.Keys(q.pending) {
		out = append(out, ns)
	}
	clear(q.pending)
	return out
}

// watch feeds store's events to fn until ctx ends, watching again (from
// the current state) whenever a watch ends.
func watch[T meta.Object](ctx context.Context, log *slog.Logger, store *registry.Store[T], fn func(registry.Event[T])) {
	for ctx.Err() == nil {
		events, err := store.Watch(ctx, "", meta.ListOptions{})
		if err != nil {
			log.Error("watching", "resource", store.Resource().String(), "err", err)
		} else {
			for e := range events {
				if e.Type == meta.Added || e.Type == meta.Modified || e.Type == meta.Deleted {
					fn(e)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryDelay):
		}
	}
}

// sync puts the objects in ns back if they are missing or changed.
func (c *Config) sync(ctx context.Context, ns string) error {
	n, _, err := c.Namespaces.Get(ctx, "", ns, meta.GetOptions{})
	if meta.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	if n.DeletionTimestamp != nil || n.Status.Phase == namespaces.PhaseTerminating {
		return nil
	}
	if err := c.syncServiceAccount(ctx, ns); err != nil {
		return err
	}
	if len(c.RootCA) == 0 {
		return nil
	}
	return c.syncRootCA(ctx, ns)
}

func (c *Config) syncServiceAccount(ctx context.Context, ns string) error {
	_, _, err := c.ServiceAccounts.Get(ctx, ns, ServiceAccountName, meta.GetOptions{})
	if err == nil || !meta.IsNotFound(err) {
		return err
	}
	_, err = c.ServiceAccounts.Create(ctx, ns, &serviceaccounts.ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: ServiceAccountName, Namespace: ns}}, registry.WriteOptions{})
	if err != nil && !meta.IsAlreadyExists(err) {
		return fmt.Errorf("creating serviceaccount %s/%s: %w", ns, ServiceAccountName, err)
	}
	return nil
}

func (c *Config) syncRootCA(ctx context.Context, ns string) error {
	data := map[string]string{RootCAKey: string(c.RootCA)}
	cur, _, err := c.ConfigMaps.Get(ctx, ns, RootCAConfigMap, meta.GetOptions{})
	if meta.IsNotFound(err) {
		_, err = c.ConfigMaps.Create(ctx, ns, &configmaps.ConfigMap{
			ObjectMeta: meta.ObjectMeta{Name: RootCAConfigMap, Namespace: ns, Annotations: map[string]string{DescriptionAnnotation: description}},
			Data:       data,
		}, registry.WriteOptions{})
		if err != nil && !meta.IsAlreadyExists(err) {
			return fmt.Errorf("creating configmap %s/%s: %w", ns, RootCAConfigMap, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading configmap %s/%s: %w", ns, RootCAConfigMap, err)
	}
	if kept(cur, data) {
		return nil
	}
	_, _, err = c.ConfigMaps.Update(ctx, ns, RootCAConfigMap, func(_ context.Context, cm *configmaps.ConfigMap) (*configmaps.ConfigMap, error) {
		if kept(cm, data) {
			return cm, nil
		}
		cm.Data = data
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[DescriptionAnnotation] = description
		return cm, nil
	}, registry.UpdateOptions{})
	if err != nil && !meta.IsNotFound(err) {
		return fmt.Errorf("updating configmap %s/%s: %w", ns, RootCAConfigMap, err)
	}
	return nil
}

// kept reports whether cm holds data and the description, as kube's
// publisher checks before it writes.
func kept(cm *configmaps.ConfigMap, data map[string]string) bool {
	return maps.Equal(cm.Data, data) && cm.Annotations[DescriptionAnnotation] != ""
}
