package etcd3

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/storage"
)

var _ storage.ProgressOrderer = (*store)(nil)

// Progress order states of a store.
const (
	progressUnknown int32 = iota
	progressOrdered
	progressUnordered
)

// Backoff between two Status calls of an endpoint that did not answer, as
// kube-apiserver's etcd feature checker: from 10 ms, doubling, up to 15 s.
const (
	minStatusBackoff = 10 * time.Millisecond
	maxStatusBackoff = 15 * time.Second
	statusTimeout    = 5 * time.Second
)

// ProgressOrdered implements storage.ProgressOrderer: true once an etcd
// endpoint answered with a version whose progress notifications are
// ordered with events and none answered with an older one.
func (s *store) ProgressOrdered() bool { return s.progressOrder.Load() == progressOrdered }

// checkProgressOrder asks every endpoint of the client its version, each
// until it answers, and records whether their progress notifications can
// be trusted. It returns when every endpoint answered or ctx ends.
func (s *store) checkProgressOrder(ctx context.Context) {
	if s.client == nil {
		return // nothing to ask: consistent reads go to etcd
	}
	eps := s.client.Endpoints()
	if len(eps) == 0 {
		// An in-process client (etcd's v3client, storage/embedded's) has
		// no endpoints: its Maintenance reaches its own server whatever
		// endpoint is named. Asking none left the order unknown, and every
		// consistent read of the watch caches went to etcd.
		eps = []string{""}
	}
	done := make(chan struct{}, len(eps))
	for _, ep := range eps {
		go func() {
			defer func() { done <- struct{}{} }()
			s.checkEndpoint(ctx, ep)
		}()
	}
	for range eps {
		<-done
	}
}

func (s *store) checkEndpoint(ctx context.Context, ep string) {
	backoff := minStatusBackoff
	for {
		sctx, cancel := context.WithTimeout(ctx, statusTimeout)
		resp, err := s.client.Status(sctx, ep)
		cancel()
		if err == nil {
			if progressOrderedVersion(resp.Version) {
				s.progressOrder.CompareAndSwap(progressUnknown, progressOrdered)
			} else {
				slog.Default().Info("etcd3: this etcd orders watch progress notifications after events only from 3.4.31 and 3.5.13: consistent reads bypass the watch cache",
					"endpoint", ep, "version", resp.Version)
				s.progressOrder.Store(progressUnordered)
			}
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, maxStatusBackoff)
	}
}

// progressOrderedVersion reports whether an etcd of version v (as its
// Status reports it: "3.5.13") sends progress notifications only after the
// events they cover: 3.4.31 and later 3.4s, 3.5.13 and later, 3.6 on. A
// version it cannot read is not trusted.
func progressOrderedVersion(v string) bool {
	v, pre, _ := strings.Cut(v, "-")
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return false
		}
		n[i] = x
	}
	major, minor, patch := n[0], n[1], n[2]
	// A pre-release comes before its release: 3.5.13-rc.0 is older than
	// 3.5.13.
	atLeast := func(p int) bool { return patch > p || (patch == p && pre == "") }
	switch {
	case major != 3:
		return major > 3
	case minor == 4:
		return atLeast(31)
	case minor == 5:
		return atLeast(13)
	}
	return minor > 5
}
