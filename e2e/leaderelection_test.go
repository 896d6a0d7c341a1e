package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// electedManager is one replica of an operator: a controller-runtime
// manager with leader election on a Lease, reconciling widgets and
// recording an event on each, as operators built with kubebuilder do.
type electedManager struct {
	id      string
	mgr     manager.Manager
	stop    context.CancelFunc
	done    chan error
	mu      sync.Mutex
	handled []string
}

func (m *electedManager) reconciled() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.handled...)
}

func startElectedManager(ctx context.Context, t *testing.T, w *Wardle, id string) *electedManager {
	t.Helper()
	lease, renew, retry := 6*time.Second, 4*time.Second, 500*time.Millisecond
	mgr, err := manager.New(w.RESTConfig(), manager.Options{Scheme: runtime.NewScheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionID: "widget-operator", LeaderElectionNamespace: "kube-system",
		LeaseDuration: &lease, RenewDeadline: &renew, RetryPeriod: &retry,
		Logger: testr.NewWithOptions(t, testr.Options{Verbosity: 2}).WithName(id),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &electedManager{id: id, mgr: mgr, done: make(chan error, 1)}
	recorder := mgr.GetEventRecorder("widget-operator")
	// The core/v1 recorder most operators still use.
	legacy := mgr.GetEventRecorderFor("widget-operator") //nolint:staticcheck
	watched := &unstructured.Unstructured{}
	watched.SetGroupVersionKind(widgetGVK)
	err = builder.ControllerManagedBy(mgr).Named("widget-" + id).For(watched).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(widgetGVK)
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, got); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			m.mu.Lock()
			m.handled = append(m.handled, req.Name)
			m.mu.Unlock()
			recorder.Eventf(got, nil, corev1.EventTypeNormal, "Reconciled", "Reconcile", "reconciled by %s", id)
			legacy.Eventf(got, corev1.EventTypeNormal, "Seen", "seen by %s", id)
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	m.stop = stop
	go func() { m.done <- mgr.Start(mctx) }()
	t.Cleanup(m.halt)
	return m
}

// halt stops the manager the way a replica stops when its process ends:
// without giving the lease up (LeaderElectionReleaseOnCancel is off).
func (m *electedManager) halt() {
	if m.stop == nil {
		return
	}
	m.stop()
	m.stop = nil
	<-m.done
}

func (m *electedManager) elected() bool {
	select {
	case <-m.mgr.Elected():
		return true
	default:
		return false
	}
}

// TestControllerRuntimeLeaderElection runs two replicas of a
// controller-runtime operator reconciling a CRD against the control plane:
// one holds the lease (coordination.k8s.io/v1) and alone reconciles,
// recording events with both of client-go's recorders (events.k8s.io/v1
// and core/v1, each posted in protobuf, read back through the other group
// too); when
// it stops, the other takes the lease over once it expires and reconciles
// what is created next.
func TestControllerRuntimeLeaderElection(t *testing.T) {
	w := startCoreChain(t)
	w.KubectlStdin(widgetCRDYAML, "apply", "-f", "-")
	w.Kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	a := startElectedManager(ctx, t, w, "a")
	b := startElectedManager(ctx, t, w, "b")
	var leader, follower *electedManager
	poll(t, "a leader elected", func() (bool, string) {
		switch {
		case a.elected() && b.elected():
			t.Fatal("both replicas are leaders")
		case a.elected():
			leader, follower = a, b
		case b.elected():
			leader, follower = b, a
		}
		return leader != nil, "no leader"
	})
	cs := kubernetes.NewForConfigOrDie(w.RESTConfig())
	l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "widget-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h == nil || *h == "" {
		t.Fatalf("the lease has no holder: %+v", l.Spec)
	}
	firstHolder := *l.Spec.HolderIdentity

	w.KubectlStdin("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: first, namespace: default}\nspec: {replicas: 1}\n", "create", "-f", "-")
	poll(t, "the leader reconciles the first widget", func() (bool, string) {
		got := leader.reconciled()
		return slices.Contains(got, "first"), fmt.Sprint(got)
	})
	note := fmt.Sprintf("reconciled by %s", leader.id)
	poll(t, "the leader's event, through events.k8s.io/v1 and core/v1", func() (bool, string) {
		evs, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		found := false
		for _, e := range evs.Items {
			if e.Note == note && e.Reason == "Reconciled" && e.Regarding.Name == "first" && e.Regarding.Kind == "Widget" && e.ReportingController == "widget-operator" {
				found = true
			}
		}
		if !found {
			return false, fmt.Sprintf("%d events", len(evs.Items))
		}
		out := w.Kubectl("get", "events", "-n", "default")
		return strings.Contains(out, note) && strings.Contains(out, "seen by "+leader.id), out
	})
	if got := follower.reconciled(); len(got) != 0 {
		t.Fatalf("the follower reconciled %v while not the leader", got)
	}

	// The leader stops without releasing the lease, as a crashed replica:
	// the other takes over once the lease expires.
	stopped := time.Now()
	leader.halt()
	poll(t, "fail-over to the other replica", func() (bool, string) { return follower.elected(), "not elected" })
	took := time.Since(stopped)
	l, err = cs.CoordinationV1().Leases("kube-system").Get(ctx, "widget-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h == nil || *h == firstHolder || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions < 1 {
		t.Errorf("lease after fail-over: holder %v (was %s), transitions %v", h, firstHolder, l.Spec.LeaseTransitions)
	}
	t.Logf("fail-over took %s (lease duration 6s)", took.Round(100*time.Millisecond))

	w.KubectlStdin("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: second, namespace: default}\nspec: {replicas: 1}\n", "create", "-f", "-")
	poll(t, "the new leader reconciles the second widget", func() (bool, string) {
		got := follower.reconciled()
		return slices.Contains(got, "second"), fmt.Sprint(got)
	})
	if errs := leaderErrors(follower); errs != nil {
		t.Error(errs)
	}
}

// leaderErrors reports a manager that ended on its own (lost leadership,
// failed to start) while it should still be running.
func leaderErrors(m *electedManager) error {
	select {
	case err := <-m.done:
		m.stop = nil
		if err == nil || errors.Is(err, context.Canceled) {
			return errors.New("the manager stopped")
		}
		return err
	default:
		return nil
	}
}
