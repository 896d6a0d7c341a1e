package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// DefaultTTL is how long an event lives after its last activity,
// kube-apiserver's --event-ttl default.
const DefaultTTL = time.Hour

// lastActivity is when an event last happened or was reported: the latest
// of its timestamps.
func lastActivity(e *Event) time.Time {
	t := e.CreationTimestamp.Time
	for _, c := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	return t
}

// Expire deletes, until ctx ends, the events whose last activity is more
// than ttl ago, looking every ttl/4 (at least every second, at most every
// minute). kube-apiserver gives each event an etcd lease of ttl renewed on
// every write; apikit's storage.Interface has no TTL that every backend
// honours, so a sweep does it: an event lives between ttl and ttl plus
// the period. The delete names the resourceVersion it saw, so an event
// written meanwhile is kept.
func Expire(ctx context.Context, store *registry.Store[*Event], ttl time.Duration, log *slog.Logger) {
	period := min(max(ttl/4, time.Second), time.Minute)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if err := sweep(ctx, store, ttl, time.Now()); err != nil && ctx.Err() == nil {
			log.Error("expiring events", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep deletes the events expired at now.
func sweep(ctx context.Context, store *registry.Store[*Event], ttl time.Duration, now time.Time) error {
	opts := meta.ListOptions{Limit: 500}
	for {
		list, err := store.List(ctx, "", opts)
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			ev := e.Object
			if now.Sub(lastActivity(ev)) <= ttl {
				continue
			}
			rv := ev.ResourceVersion
			_, _, err := store.Delete(ctx, ev.Namespace, ev.Name, registry.DeleteOptions{Preconditions: &meta.Preconditions{ResourceVersion: &rv}})
			if err != nil && !meta.IsNotFound(err) && !meta.IsConflict(err) {
				return err
			}
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}
