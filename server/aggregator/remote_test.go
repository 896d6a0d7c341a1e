package aggregator_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/storage/memory"
)

// gadget is the remote server's namespaced resource.
type gadget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		Color string `json:"color,omitempty"`
	} `json:"spec"`
}

// remoteServer is an apikit server serving test.example.com/v1 gadgets
// for the Service ns/api, taking its user from the front-proxy headers
// (which it records) as a delegated server behind the aggregator does.
type remoteServer struct {
	addr   string
	store  *registry.Store[*gadget]
	mu     sync.Mutex
	users  map[string]bool // X-Remote-User of every request
	cancel context.CancelFunc
	done   chan error
}

func startRemoteServer(t *testing.T, h *harness) *remoteServer {
	t.Helper()
	pair, err := h.ca.IssueServing([]string{"api.ns.svc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	rs := &remoteServer{users: map[string]bool{}, done: make(chan error, 1)}
	rs.store = registry.MustNewStore(registry.Options[*gadget]{
		Resource: meta.GroupResource{Group: "test.example.com", Resource: "gadgets"}, Kind: "Gadget", NamespaceScoped: true,
		StorageVersion: "v1", Strategy: registry.DefaultStrategy[*gadget]{}, Storage: mem,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.NewConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.SecureServing.Listener = ln
	cfg.SecureServing.Certificate = &cert
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.Authenticator = authn.Func(func(r *http.Request) (*authn.Response, bool, error) {
		name := r.Header.Get(aggregator.HeaderUser)
		if name == "" {
			return nil, false, nil
		}
		rs.mu.Lock()
		rs.users[name] = true
		rs.mu.Unlock()
		return &authn.Response{User: authn.User{Name: name, Groups: r.Header.Values(aggregator.HeaderGroup)}}, true, nil
	})
	c, err := cfg.Complete()
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.New("remote", server.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InstallAPIGroup(server.NewAPIGroupInfo("test.example.com").AddVersion("v1", registry.Serve(rs.store))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rs.cancel, rs.addr = cancel, ln.Addr().String()
	prepared := s.PrepareRun()
	go func() { rs.done <- prepared.Run(ctx) }()
	t.Cleanup(rs.stop)
	return rs
}

// stop stops the server (once).
func (rs *remoteServer) stop() {
	if rs.cancel != nil {
		rs.cancel()
		<-rs.done
		rs.cancel = nil
	}
}

func (rs *remoteServer) sawUsers() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []string
	for u := range rs.users {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// TestRemoteResources: an available remote APIService's resources are
// registry.Resources the control plane's controllers read and write
// through the backend as system:kube-controller-manager; an unavailable
// one is left out with client-go discovery's error, and
// WatchRemoteResources tells of both changes.
func TestRemoteResources(t *testing.T) {
	resolver := &testResolver{m: aggregator.StaticResolver{}}
	h := newHarness(t, resolver)
	rs := startRemoteServer(t, h)
	resolver.set("ns/api", rs.addr)
	changed := make(chan struct{}, 100)
	stop := h.agg.WatchRemoteResources(func() { changed <- struct{}{} })
	defer stop()

	if res, err := h.agg.RemoteResources(); len(res) != 0 || err != nil {
		t.Fatalf("before any remote APIService: %d resources, %v", len(res), err)
	}
	h.register(h.ca.CertPEM)
	h.waitCondition("v1.test.example.com", aggregator.ConditionTrue, aggregator.ReasonPassed, 20*time.Second)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("WatchRemoteResources told nothing of the APIService becoming available")
	}
	res, err := h.agg.RemoteResources()
	if err != nil || len(res) != 1 {
		t.Fatalf("RemoteResources = %d resources, %v; want gadgets", len(res), err)
	}
	gadgets := res[0]
	if info := gadgets.Info(); info.Resource != "gadgets" || info.Kind != "Gadget" || !info.NamespaceScoped ||
		info.GroupVersion != (meta.GroupVersion{Group: "test.example.com", Version: "v1"}) || !info.Serves("deletecollection") {
		t.Fatalf("info = %+v", info)
	}

	ctx := t.Context()
	mk := func(ns, name string, finalizers ...string) {
		t.Helper()
		g := &aggregator.RemoteObject{TypeMeta: meta.TypeMeta{APIVersion: "test.example.com/v1", Kind: "Gadget"},
			ObjectMeta: meta.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers}}
		g.Fields = map[string]json.RawMessage{"spec": json.RawMessage(`{"color":"red"}`)}
		if _, err := gadgets.Create(ctx, ns, g, registry.WriteOptions{}); err != nil {
			t.Fatalf("creating %s/%s: %v", ns, name, err)
		}
	}
	names := func(ns string) []string {
		t.Helper()
		l, err := gadgets.List(ctx, ns, meta.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range l.Items {
			o, _ := it.Object()
			out = append(out, o.GetObjectMeta().Namespace+"/"+o.GetObjectMeta().Name)
		}
		slices.Sort(out)
		return out
	}
	events, err := gadgets.Watch(ctx, "a", meta.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mk("a", "one")
	mk("a", "kept", "example.com/hold")
	mk("b", "other")

	t.Run("watch", func(t *testing.T) {
		select {
		case ev := <-events:
			o, _ := ev.Item.Object()
			if ev.Type != meta.Added || o.GetObjectMeta().Name != "one" {
				t.Errorf("first event %s %s, want ADDED one", ev.Type, o.GetObjectMeta().Name)
			}
		case <-time.After(10 * time.Second):
			t.Error("no watch event")
		}
	})
	t.Run("get and update keep the other fields", func(t *testing.T) {
		_, _, err := gadgets.Update(ctx, "a", "one", func(_ context.Context, cur meta.Object) (meta.Object, error) {
			if cur == nil {
				return nil, errors.New("not found")
			}
			cur.GetObjectMeta().Labels = map[string]string{"l": "v"}
			return cur, nil
		}, registry.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, _, err := rs.store.Get(ctx, "a", "one", meta.GetOptions{})
		if err != nil || g.Labels["l"] != "v" || g.Spec.Color != "red" {
			t.Fatalf("stored after the update: %+v, %v", g, err)
		}
		it, err := gadgets.Get(ctx, "a", "one", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := it.JSON(); !strings.Contains(string(b), `"spec":{"color":"red"}`) {
			t.Errorf("GET = %s", b)
		}
		if _, err := gadgets.Get(ctx, "a", "nothing", meta.GetOptions{}); !meta.IsNotFound(err) {
			t.Errorf("GET of a missing object: %v, want NotFound", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		mk("c", "x")
		mk("c", "held", "example.com/hold")
		tests := []struct {
			name        string
			wantDeleted bool
		}{{"x", true}, {"held", false}}
		for _, tc := range tests {
			_, deleted, err := gadgets.Delete(ctx, "c", tc.name, registry.DeleteOptions{})
			if err != nil || deleted != tc.wantDeleted {
				t.Errorf("delete %s: deleted %v, %v; want %v", tc.name, deleted, err, tc.wantDeleted)
			}
		}
		if _, _, err := gadgets.Delete(ctx, "c", "x", registry.DeleteOptions{}); !meta.IsNotFound(err) {
			t.Errorf("deleting again: %v, want NotFound", err)
		}
	})
	t.Run("deletecollection in one namespace", func(t *testing.T) {
		if _, err := gadgets.DeleteCollection(ctx, "a", meta.ListOptions{}, registry.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := names("a"); !slices.Equal(got, []string{"a/kept"}) {
			t.Errorf("left in a: %v, want a/kept (held by its finalizer)", got)
		}
		if got := names("b"); !slices.Equal(got, []string{"b/other"}) {
			t.Errorf("left in b: %v", got)
		}
	})
	if got := rs.sawUsers(); !slices.Contains(got, "system:kube-controller-manager") || slices.Contains(got, "alice") {
		t.Errorf("the backend saw users %v, want system:kube-controller-manager", got)
	}

	t.Run("unavailable", func(t *testing.T) {
		for len(changed) > 0 {
			<-changed
		}
		rs.stop()
		h.waitCondition("v1.test.example.com", aggregator.ConditionFalse, aggregator.ReasonFailedDiscoveryCheck, 20*time.Second)
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("WatchRemoteResources told nothing of the APIService becoming unavailable")
		}
		res, err := h.agg.RemoteResources()
		const want = "unable to retrieve the complete list of server APIs: test.example.com/v1: stale GroupVersion discovery: test.example.com/v1"
		if len(res) != 0 || err == nil || err.Error() != want {
			t.Fatalf("RemoteResources = %d resources, %v; want none, %q", len(res), err, want)
		}
		if _, err := gadgets.List(ctx, "a", meta.ListOptions{}); meta.ReasonForError(err) != meta.StatusReasonServiceUnavailable {
			t.Errorf("a list through an unavailable APIService: %v, want ServiceUnavailable", err)
		}
	})
}
