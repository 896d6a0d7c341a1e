package aggregator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// runController is the post-start hook apiservice-registration-controller.
// It lists and watches the APIServices into memory, where the router reads
// them, and runs the availability controller: every ProbeInterval (every
// UnavailableProbeInterval while it is unavailable), when an
// APIService's spec changes and when a proxied request cannot dial its
// backend, it resolves the Service and asks the backend for its discovery
// document (GET /apis/<group>/<version>, as system:kube-aggregator in
// system:masters), and sets the Available condition with
// kube-aggregator's reasons: Passed, ServiceNotFound, ServicePortError,
// MissingEndpoints, ServiceAccessError or FailedDiscoveryCheck (Local for
// local APIServices). The document becomes the group-version's discovery,
// and a changed one has the backend's OpenAPI fetched again. The hook is
// done once the APIServices are listed; the controllers stop with the
// server.
func (a *Aggregator) runController(ctx context.Context) error {
	synced := make(chan struct{})
	a.wg.Add(2)
	go func() {
		defer a.wg.Done()
		a.watchAPIServices(ctx, synced)
	}()
	go func() {
		defer a.wg.Done()
		a.probeLoop(ctx)
	}()
	select {
	case <-synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchAPIServices keeps a.services equal to the store through an
// informer: a list, then a watch from its revision (resumed when it ends,
// a new list after a 410). synced is closed after the first list.
func (a *Aggregator) watchAPIServices(ctx context.Context, synced chan struct{}) {
	inf := informer.New(informer.Config[*APIService]{
		Source: a.Store,
		Name:   "apiservices",
		Logger: a.cfg.Logger,
		Handlers: informer.Handlers[*APIService]{
			OnAdd:    a.put,
			OnUpdate: func(_, s *APIService) { a.put(s) },
			OnDelete: func(s *APIService) { a.remove(s.Name) },
		},
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		select {
		case <-inf.Synced():
			close(synced)
		case <-ctx.Done():
		}
	})
	inf.Run(ctx)
}

// put records an APIService as the store has it now. A changed spec
// gets a new backend (when its TLS settings changed) and a probe.
func (a *Aggregator) put(s *APIService) {
	a.mu.Lock()
	old := a.services[s.Name]
	if old != nil && old.UID == s.UID && olderRevision(s.ResourceVersion, old.ResourceVersion) {
		// writeCondition put a newer one already; the watch is behind.
		a.mu.Unlock()
		return
	}
	a.services[s.Name] = s
	if s.Labels[AutomanagedLabel] == AutomanagedAlways {
		a.registerAgain()
	}
	specChanged := old == nil || !reflect.DeepEqual(old.Spec, s.Spec)
	var closing *backend
	remerge := false
	if specChanged {
		b := a.backends[s.Name]
		switch {
		case s.Spec.Service == nil:
			// Local now: nothing of a backend is kept.
			delete(a.backends, s.Name)
			delete(a.docs, s.Name)
			_, remerge = a.remoteOA[s.Name]
			delete(a.remoteOA, s.Name)
			closing = b
		case b == nil || b.tlsKey != tlsKey(s):
			nb, err := newBackend(s, a.cfg.ProxyClientCertificate)
			if err != nil {
				a.cfg.Logger.Warn("aggregator: APIService unusable", "apiservice", s.Name, "err", err)
				delete(a.backends, s.Name)
			} else {
				a.backends[s.Name] = nb
			}
			closing = b
		}
		if old != nil && old.GroupVersion() != s.GroupVersion() {
			delete(a.docs, s.Name)
			if _, ok := a.remoteOA[s.Name]; ok {
				delete(a.remoteOA, s.Name)
				remerge = true
			}
		}
	}
	a.mu.Unlock()
	if closing != nil {
		closing.close()
	}
	if remerge {
		a.mergeOpenAPI()
	}
	if specChanged || !hasCondition(s) {
		a.probeSoon(s.Name)
	}
	if (s.Spec.Service != nil || old != nil && old.Spec.Service != nil) && (specChanged || old.IsAvailable() != s.IsAvailable()) {
		a.remoteChanged()
	}
}

// olderRevision reports whether resource version a is older than b. Both
// are storage revisions (decimal); anything else is never older.
func olderRevision(a, b string) bool {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && na < nb
}

func hasCondition(s *APIService) bool { return s.Status.Condition(Available) != nil }

// remove forgets a deleted APIService.
func (a *Aggregator) remove(name string) {
	a.registerAgain()
	a.mu.Lock()
	b := a.backends[name]
	_, hadOpenAPI := a.remoteOA[name]
	delete(a.services, name)
	delete(a.backends, name)
	delete(a.docs, name)
	delete(a.remoteOA, name)
	a.mu.Unlock()
	if b != nil {
		b.close()
	}
	if hadOpenAPI {
		a.mergeOpenAPI()
	}
	a.remoteChanged()
}

// probeLoop runs the probes: every available APIService each
// ProbeInterval, every other one each UnavailableProbeInterval, and those
// asked for on a.probe at once. One APIService is probed by one goroutine
// at a time; a request for it meanwhile runs after.
func (a *Aggregator) probeLoop(ctx context.Context) {
	ticker := time.NewTicker(min(a.cfg.ProbeInterval, a.cfg.UnavailableProbeInterval))
	defer ticker.Stop()
	done := make(chan string)
	inflight, again := map[string]bool{}, map[string]bool{}
	last := map[string]time.Time{} // when each probe last started
	start := func(name string) {
		if inflight[name] {
			again[name] = true
			return
		}
		inflight[name] = true
		last[name] = time.Now()
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.check(ctx, name)
			select {
			case done <- name:
			case <-ctx.Done():
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			a.mu.RLock()
			var due []string
			for n, s := range a.services {
				every := a.cfg.ProbeInterval
				if !s.IsAvailable() {
					every = a.cfg.UnavailableProbeInterval
				}
				if now.Sub(last[n]) >= every-every/10 {
					due = append(due, n)
				}
			}
			for n := range last {
				if a.services[n] == nil {
					delete(last, n)
				}
			}
			a.mu.RUnlock()
			for _, n := range due {
				start(n)
			}
		case n := <-a.probe:
			start(n)
		case n := <-done:
			delete(inflight, n)
			if again[n] {
				delete(again, n)
				start(n)
			}
		}
	}
}

// check probes one APIService and writes its Available condition.
func (a *Aggregator) check(ctx context.Context, name string) {
	a.mu.RLock()
	s, b := a.services[name], a.backends[name]
	hadDoc := a.docs[name]
	a.mu.RUnlock()
	if s == nil {
		return
	}
	var cond APIServiceCondition
	switch {
	case s.Spec.Service == nil:
		cond = localCondition()
	case b == nil:
		cond = unavailable(ReasonServiceAccessError, "the transport to the service cannot be built: spec.caBundle holds no PEM certificate")
	default:
		cond = a.probeBackend(ctx, s, b, hadDoc)
	}
	if ctx.Err() != nil {
		return
	}
	a.writeCondition(ctx, s, cond)
}

func unavailable(reason, message string) APIServiceCondition {
	return APIServiceCondition{Type: Available, Status: ConditionFalse, LastTransitionTime: meta.Now(), Reason: reason, Message: message}
}

// probeBackend asks a remote APIService's backend for its discovery
// document and keeps it.
func (a *Aggregator) probeBackend(ctx context.Context, s *APIService, b *backend, hadDoc *discoveryDoc) APIServiceCondition {
	svc := s.Spec.Service
	base, err := a.cfg.ServiceResolver.ResolveEndpoint(svc.Namespace, svc.Name, svc.PortOr443())
	if err != nil {
		return unavailable(reasonFor(err), err.Error())
	}
	u := discoveryURL(base, s)
	body, _, err := b.get(ctx, u, a.cfg.ProbeTimeout, "application/json")
	if err != nil {
		return unavailable(ReasonFailedDiscoveryCheck, fmt.Sprintf("failing or missing response from %s: %v", u, err))
	}
	var list meta.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil || list.GroupVersion != s.GroupVersion().String() {
		if err == nil {
			err = fmt.Errorf("the document is for %q", list.GroupVersion)
		}
		return unavailable(ReasonFailedDiscoveryCheck, fmt.Sprintf("failing or missing response from %s: not a discovery document: %v", u, err))
	}
	changed := hadDoc == nil || !bytes.Equal(hadDoc.raw, body)
	a.mu.Lock()
	if a.services[s.Name] != nil {
		a.docs[s.Name] = &discoveryDoc{list: &list, raw: body}
	}
	oa := a.remoteOA[s.Name]
	a.mu.Unlock()
	if changed {
		a.remoteChanged()
	}
	if changed || !s.IsAvailable() || oa == nil || time.Since(oa.fetched) > a.cfg.OpenAPIRefreshInterval {
		a.refreshOpenAPI(ctx, s, b, base)
	}
	return APIServiceCondition{Type: Available, Status: ConditionTrue, LastTransitionTime: meta.Now(), Reason: ReasonPassed, Message: "all checks passed"}
}

// writeCondition stores cond on the APIService's status unless it is
// there already.
func (a *Aggregator) writeCondition(ctx context.Context, s *APIService, cond APIServiceCondition) {
	if c := s.Status.Condition(Available); c != nil && c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
		return
	}
	updated, _, err := a.Store.Update(ctx, "", s.Name, func(_ context.Context, cur *APIService) (*APIService, error) {
		if cur == nil || cur.UID != s.UID {
			return nil, meta.NewConflict(Resource, s.Name, fmt.Errorf("the APIService was replaced"))
		}
		setCondition(&cur.Status, cond)
		return cur, nil
	}, registry.UpdateOptions{Subresource: "status"})
	switch {
	case err == nil:
		// The router sees the new condition now, not when the watch
		// delivers it: a backend marked available is proxied to at once.
		a.put(updated)
		if cond.Status != ConditionTrue || s.Status.Condition(Available) != nil {
			a.cfg.Logger.Info("aggregator: APIService availability changed", "apiservice", s.Name,
				"available", string(cond.Status), "reason", cond.Reason, "message", cond.Message)
		}
	case meta.IsNotFound(err), meta.IsConflict(err), ctx.Err() != nil:
	default:
		a.cfg.Logger.Warn("aggregator: updating the status of an APIService failed", "apiservice", s.Name, "err", err)
	}
}
