package flowcontrol

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/request"
)

func info(method, target string) *request.Info {
	return request.DefaultResolver.Resolve(httptest.NewRequest(method, target, nil))
}

func user(name string, groups ...string) *authn.User {
	return &authn.User{Name: name, Groups: append(groups, authn.AllAuthenticated)}
}

func TestDefaultClassification(t *testing.T) {
	a, err := NewAPF(APFConfig{ServerConcurrencyLimit: 600})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		u        *authn.User
		info     *request.Info
		fs, plev string
	}{
		{"masters are exempt", user("admin", "system:masters"), info("GET", "/apis/wardle.example.com/v1beta1/flunders"), "exempt", "exempt"},
		{"probes are exempt", anonymous, info("GET", "/readyz"), "probes", "exempt"},
		{"probe subpaths too", user("x"), info("GET", "/healthz/etcd"), "probes", "exempt"},
		{"but not posts to them", user("x"), info("POST", "/healthz"), "global-default", "global-default"},
		{"a user", user("alice"), info("GET", "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f"), "global-default", "global-default"},
		{"anonymous", anonymous, info("GET", "/version"), "global-default", "global-default"},
		{"nodes", user("system:node:n1", "system:nodes"), info("GET", "/api/v1/pods"), "system-nodes", "system"},
		{"node status", user("system:node:n1", "system:nodes"), info("PATCH", "/api/v1/nodes/n1/status"), "system-node-high", "node-high"},
		{"node leases", user("system:node:n1", "system:nodes"), info("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1"), "system-node-high", "node-high"},
		{"controller manager leader election", user("system:kube-controller-manager"), info("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm"), "system-leader-election", "leader-election"},
		{"controller manager endpoints", user("system:kube-controller-manager"), info("PUT", "/api/v1/namespaces/default/endpoints/e"), "endpoint-controller", "workload-high"},
		{"controller manager otherwise", user("system:kube-controller-manager"), info("GET", "/api/v1/pods"), "kube-controller-manager", "workload-high"},
		{"kube-system service account", user("system:serviceaccount:kube-system:foo", "system:serviceaccounts"), info("GET", "/api/v1/pods"), "kube-system-service-accounts", "workload-high"},
		{"kube-system service account electing", user("system:serviceaccount:kube-system:foo", "system:serviceaccounts"), info("GET", "/api/v1/namespaces/x/configmaps/c"), "workload-leader-election", "leader-election"},
		{"other service account", user("system:serviceaccount:apps:foo", "system:serviceaccounts"), info("GET", "/api/v1/pods"), "service-accounts", "workload-low"},
		{"lookalike service account", user("system:serviceaccount:kube-systemx:foo"), info("GET", "/api/v1/pods"), "global-default", "global-default"},
		{"nobody at all", &authn.User{Name: "ghost"}, info("GET", "/api/v1/pods"), "catch-all", "catch-all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, pl := a.Classify(tc.u, tc.info)
			if fs != tc.fs || pl != tc.plev {
				t.Fatalf("classified as %s/%s, want %s/%s", fs, pl, tc.fs, tc.plev)
			}
		})
	}
}

func TestMatching(t *testing.T) {
	fs := func(rules ...PolicyRulesWithSubjects) *FlowSchema {
		return &FlowSchema{Spec: FlowSchemaSpec{Rules: rules}}
	}
	alice := user("alice", "devs")
	for _, tc := range []struct {
		name string
		fs   *FlowSchema
		u    *authn.User
		info *request.Info
		want bool
	}{
		{"user by name", fs(PolicyRulesWithSubjects{Subjects: users("alice"), ResourceRules: []ResourcePolicyRule{resourceRuleAll()}}), alice, info("GET", "/api/v1/pods"), true},
		{"other user", fs(PolicyRulesWithSubjects{Subjects: users("bob"), ResourceRules: []ResourcePolicyRule{resourceRuleAll()}}), alice, info("GET", "/api/v1/pods"), false},
		{"any user", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{resourceRuleAll()}}), alice, info("GET", "/api/v1/pods"), true},
		{"group", fs(PolicyRulesWithSubjects{Subjects: groups("devs"), ResourceRules: []ResourcePolicyRule{resourceRuleAll()}}), alice, info("GET", "/api/v1/pods"), true},
		{"service account by name", fs(PolicyRulesWithSubjects{Subjects: []Subject{{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "ns", Name: "sa"}}}, ResourceRules: []ResourcePolicyRule{resourceRuleAll()}}),
			user("system:serviceaccount:ns:sa"), info("GET", "/api/v1/pods"), true},
		{"service account, other name", fs(PolicyRulesWithSubjects{Subjects: []Subject{{Kind: SubjectKindServiceAccount, ServiceAccount: &ServiceAccountSubject{Namespace: "ns", Name: "sa"}}}, ResourceRules: []ResourcePolicyRule{resourceRuleAll()}}),
			user("system:serviceaccount:ns:sa2"), info("GET", "/api/v1/pods"), false},
		{"verb", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"list"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true}}}), alice, info("GET", "/api/v1/pods"), true},
		{"other verb", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true}}}), alice, info("GET", "/api/v1/pods"), false},
		{"group and resource", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"wardle.example.com"}, Resources: []string{"flunders"}, Namespaces: []string{"*"}}}}), alice, info("GET", "/apis/wardle.example.com/v1beta1/namespaces/a/flunders"), true},
		{"other group", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"flunders"}, Namespaces: []string{"*"}}}}), alice, info("GET", "/apis/wardle.example.com/v1beta1/namespaces/a/flunders"), false},
		{"subresource", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"flunders/status"}, Namespaces: []string{"*"}}}}), alice, info("PUT", "/apis/wardle.example.com/v1beta1/namespaces/a/flunders/f/status"), true},
		{"resource is not its subresource", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"flunders"}, Namespaces: []string{"*"}}}}), alice, info("PUT", "/apis/wardle.example.com/v1beta1/namespaces/a/flunders/f/status"), false},
		{"namespace", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"a"}}}}), alice, info("GET", "/api/v1/namespaces/a/pods"), true},
		{"other namespace", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"a"}}}}), alice, info("GET", "/api/v1/namespaces/b/pods"), false},
		{"cluster scope needs ClusterScope", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}}}}), alice, info("GET", "/api/v1/pods"), false},
		{"non-resource path", fs(PolicyRulesWithSubjects{Subjects: users("*"), NonResourceRules: []NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}}}), alice, info("GET", "/version"), true},
		{"non-resource prefix", fs(PolicyRulesWithSubjects{Subjects: users("*"), NonResourceRules: []NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/debug/*"}}}}), alice, info("GET", "/debug/api_priority_and_fairness/dump_queues"), true},
		{"non-resource rule for resources", fs(PolicyRulesWithSubjects{Subjects: users("*"), NonResourceRules: []NonResourcePolicyRule{nonResourceRuleAll()}}), alice, info("GET", "/api/v1/pods"), false},
		{"resource rule for paths", fs(PolicyRulesWithSubjects{Subjects: users("*"), ResourceRules: []ResourcePolicyRule{resourceRuleAll()}}), alice, info("GET", "/version"), false},
		{"second rule", fs(PolicyRulesWithSubjects{Subjects: users("bob"), ResourceRules: []ResourcePolicyRule{resourceRuleAll()}},
			PolicyRulesWithSubjects{Subjects: groups("devs"), NonResourceRules: []NonResourcePolicyRule{nonResourceRuleAll()}}), alice, info("GET", "/openapi/v2"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.fs, tc.u, tc.info); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

// tenantConfig is the defaults plus a schema sending user "a" to a level
// of its own.
func tenantConfig(queueLength int32, lvlType LimitResponseType) ([]*FlowSchema, []*PriorityLevelConfiguration) {
	schemas, levels := DefaultConfiguration()
	schemas = append(schemas, newFlowSchema("tenant-a", "tenant-a", 500, FlowDistinguisherMethodByUser,
		PolicyRulesWithSubjects{Subjects: users("a"), ResourceRules: []ResourcePolicyRule{resourceRuleAll()}, NonResourceRules: []NonResourcePolicyRule{nonResourceRuleAll()}}))
	lr := LimitResponse{Type: lvlType}
	if lvlType == LimitResponseTypeQueue {
		lr.Queuing = &QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: queueLength}
	}
	levels = append(levels, newPriorityLevel("tenant-a", PriorityLevelConfigurationSpec{Type: PriorityLevelEnablementLimited,
		Limited: &LimitedPriorityLevelConfiguration{NominalConcurrencyShares: int32Ptr(1), LimitResponse: lr}}))
	return schemas, levels
}

// admit runs Admit for a request by u and returns its done func or error.
func admit(a *APF, ctx context.Context, u *authn.User, method, target string) (http.Header, func(), error) {
	r := httptest.NewRequest(method, target, nil)
	ctx = request.WithInfo(authn.WithUser(ctx, u), request.DefaultResolver.Resolve(r))
	w := httptest.NewRecorder()
	done, err := a.Admit(w, r.WithContext(ctx))
	return w.Header(), done, err
}

func TestExemptIsNeverQueued(t *testing.T) {
	// 245 shares: with a limit of 7 seats every limited level gets one.
	a, err := NewAPF(APFConfig{ServerConcurrencyLimit: 7, RequestWaitLimit: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, done, err := admit(a, context.Background(), user("bob"), "GET", "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	// global-default is full: bob's next request waits, then is refused.
	if _, _, err := admit(a, context.Background(), user("bob"), "GET", "/api/v1/pods"); meta.StatusOf(err).Code != http.StatusTooManyRequests {
		t.Fatalf("second request on a full level: %v", err)
	}
	// system:masters get through at once, however many.
	start := time.Now()
	var dones []func()
	for range 100 {
		h, d, err := admit(a, context.Background(), user("admin", "system:masters"), "GET", "/api/v1/pods")
		if err != nil {
			t.Fatal(err)
		}
		if h.Get(ResponseHeaderPriorityLevelUID) != "" {
			t.Fatalf("the built-in exempt level has no UID, header %q", h.Get(ResponseHeaderPriorityLevelUID))
		}
		dones = append(dones, d)
	}
	// A queued request would wait out RequestWaitLimit (50 ms) each, 5 s for
	// the hundred; the bound leaves room for a loaded machine, not for queuing.
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("100 exempt requests took %v", d)
	}
	for _, d := range dones {
		d()
	}
}

func TestApplyTakesEffectAtOnce(t *testing.T) {
	a, err := NewAPF(APFConfig{ServerConcurrencyLimit: 600, RequestWaitLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, pl := a.Classify(user("a"), info("GET", "/api/v1/pods")); pl != "global-default" {
		t.Fatalf("before: %s", pl)
	}
	if err := a.Apply(tenantConfig(0, LimitResponseTypeReject)); err != nil {
		t.Fatal(err)
	}
	if _, pl := a.Classify(user("a"), info("GET", "/api/v1/pods")); pl != "tenant-a" {
		t.Fatalf("after: %s", pl)
	}
	// tenant-a has 1 share of 246: 3 seats, and rejects beyond them.
	var dones []func()
	for range 3 {
		_, d, err := admit(a, context.Background(), user("a"), "GET", "/api/v1/pods")
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, d)
	}
	h, _, err := admit(a, context.Background(), user("a"), "GET", "/api/v1/pods")
	if meta.StatusOf(err).Code != http.StatusTooManyRequests || meta.StatusOf(err).Details.RetryAfterSeconds != 1 {
		t.Fatalf("fourth request: %v", err)
	}
	if h.Get(ResponseHeaderFlowSchemaUID) == "" && h[headerFlowSchemaUID] == nil {
		t.Fatal("no flow schema header on a refusal")
	}
	// Queue up to 2 instead: the fourth waits, the sixth is refused.
	if err := a.Apply(tenantConfig(2, LimitResponseTypeQueue)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, d, err := admit(a, context.Background(), user("a"), "GET", "/api/v1/pods")
			if err == nil {
				d()
			}
			errs <- err
		}()
	}
	lvl := a.state.Load().levels
	var qs *queueSet
	for _, l := range lvl {
		if l.name == "tenant-a" {
			qs = l.qs
		}
	}
	waitFor(t, qs, 2)
	if _, _, err := admit(a, context.Background(), user("a"), "GET", "/api/v1/pods"); meta.StatusOf(err).Code != http.StatusTooManyRequests {
		t.Fatalf("beyond the queue: %v", err)
	}
	for _, d := range dones {
		d()
	}
	wg.Wait()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("queued request: %v", err)
		}
	}
	// Dropping the schema's level makes it dangling: back to global-default.
	schemas, levels := tenantConfig(2, LimitResponseTypeQueue)
	if err := a.Apply(schemas, levels[:len(levels)-1]); err != nil {
		t.Fatal(err)
	}
	if _, pl := a.Classify(user("a"), info("GET", "/api/v1/pods")); pl != "global-default" {
		t.Fatalf("dangling schema still used: %s", pl)
	}
	// Deleting the mandatory objects does not remove them.
	if err := a.Apply(nil, nil); err != nil {
		t.Fatal(err)
	}
	if fs, pl := a.Classify(user("admin", "system:masters"), info("GET", "/api/v1/pods")); fs != "exempt" || pl != "exempt" {
		t.Fatalf("without objects, masters go to %s/%s", fs, pl)
	}
	if fs, pl := a.Classify(user("a"), info("GET", "/api/v1/pods")); fs != "catch-all" || pl != "catch-all" {
		t.Fatalf("without objects, users go to %s/%s", fs, pl)
	}
}

func TestBorrowing(t *testing.T) {
	clock := newFakeClock()
	a, err := NewAPF(APFConfig{ServerConcurrencyLimit: 600, RequestWaitLimit: time.Minute, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	level := func(name string) *priorityLevel {
		for _, l := range a.state.Load().levels {
			if l.name == name {
				return l
			}
		}
		t.Fatalf("no level %s", name)
		return nil
	}
	gd := level("global-default")
	if gd.nominalCL != 49 || gd.minCL != 24 {
		t.Fatalf("global-default nominal %d, min %d; want kube-apiserver's 49 and 24", gd.nominalCL, gd.minCL)
	}
	// global-default is busy, everything else idle: it borrows.
	var dones []func()
	for range 49 {
		_, d, err := admit(a, context.Background(), user("bob"), "GET", "/api/v1/pods")
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, d)
	}
	clock.Step(10 * time.Second)
	a.AdjustBorrowing()
	a.mu.Lock()
	cl, sum, wl := gd.currentCL, 0, level("workload-low")
	for _, l := range a.state.Load().levels {
		sum += l.currentCL
	}
	wlCL := wl.currentCL
	a.mu.Unlock()
	if cl <= 49 {
		t.Fatalf("busy global-default has %d seats, want more than its nominal 49", cl)
	}
	// Idle levels keep targets at their minimum; the server's seats are
	// shared in proportion to the targets, so they stay well below
	// nominal, and all seats are still handed out.
	if wlCL >= wl.nominalCL || wlCL < wl.minCL {
		t.Fatalf("idle workload-low has %d seats, want between %d and its nominal %d", wlCL, wl.minCL, wl.nominalCL)
	}
	if sum < 598 || sum > 606 {
		t.Fatalf("levels hold %d seats in all, want about 602", sum)
	}
	for _, d := range dones {
		d()
	}
}

func TestEstimates(t *testing.T) {
	c := EstimatorConfig{}.withDefaults()
	src := fakeSource{count: 2000, watches: 25}
	for _, tc := range []struct {
		target, method string
		want           WorkEstimate
	}{
		{"/apis/w/v1/flunders", "GET", WorkEstimate{InitialSeats: 10}},
		{"/apis/w/v1/flunders?limit=50", "GET", WorkEstimate{InitialSeats: 1}},
		{"/apis/w/v1/flunders?limit=500", "GET", WorkEstimate{InitialSeats: 5}},
		{"/apis/w/v1/flunders?limit=50&labelSelector=a%3Db", "GET", WorkEstimate{InitialSeats: 10}},
		{"/apis/w/v1/flunders/f", "GET", WorkEstimate{InitialSeats: 1}},
		{"/apis/w/v1/flunders?watch=1&resourceVersion=10", "GET", WorkEstimate{InitialSeats: 1}},
		{"/apis/w/v1/flunders?watch=1", "GET", WorkEstimate{InitialSeats: 10}},
		{"/apis/w/v1/flunders?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "GET", WorkEstimate{InitialSeats: 10}},
		{"/apis/w/v1/flunders", "POST", WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 5 * time.Millisecond}},
		{"/version", "GET", WorkEstimate{InitialSeats: 1}},
	} {
		if got := c.estimate(info(tc.method, tc.target), httptest.NewRequest(tc.method, tc.target, nil).URL.RawQuery, src, 10); got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
	// A fan-out wider than the cap is reshaped: the same work, narrower.
	if got := c.estimate(info("POST", "/apis/w/v1/flunders"), "", fakeSource{watches: 400}, 10); got.FinalSeats != 10 || got.AdditionalLatency != 20*time.Millisecond {
		t.Errorf("400 watchers: %+v", got)
	}
	if got := c.estimate(info("GET", "/apis/w/v1/flunders"), "", fakeSource{unknown: true}, 10); got.InitialSeats != 1 {
		t.Errorf("unknown count: %+v", got)
	}
}

type fakeSource struct {
	count   int64
	unknown bool
	watches int
}

func (f fakeSource) objectCount(*request.Info) (int64, bool) { return f.count, !f.unknown }
func (f fakeSource) interestedWatches(*request.Info) int     { return f.watches }

func TestWatchesAreCounted(t *testing.T) {
	a, err := NewAPF(APFConfig{ServerConcurrencyLimit: 600})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	for range 12 {
		_, d, err := admit(a, ctx, user("bob"), "GET", "/apis/w/v1/namespaces/ns/flunders?watch=1&resourceVersion=5")
		if err != nil {
			t.Fatal(err)
		}
		d()
	}
	if n := a.interestedWatches(info("POST", "/apis/w/v1/namespaces/ns/flunders")); n != 12 {
		t.Fatalf("%d interested watches, want 12", n)
	}
	if n := a.interestedWatches(info("POST", "/apis/w/v1/namespaces/other/flunders")); n != 0 {
		t.Fatalf("%d watches in another namespace", n)
	}
	cancel() // the watch requests end
	deadline := time.Now().Add(5 * time.Second)
	for a.interestedWatches(info("POST", "/apis/w/v1/namespaces/ns/flunders")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("ended watches still counted")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestMaxInFlight(t *testing.T) {
	m := NewMaxInFlight(1, 1)
	_, d1, err := admitPolicy(m, user("bob"), "GET", "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admitPolicy(m, user("bob"), "GET", "/api/v1/pods"); meta.StatusOf(err).Code != http.StatusTooManyRequests {
		t.Fatalf("second read: %v", err)
	}
	// Mutating requests have their own limit; watches and masters none.
	_, d2, err := admitPolicy(m, user("bob"), "POST", "/api/v1/namespaces/a/pods")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := admitPolicy(m, user("bob"), "GET", "/api/v1/pods?watch=1"); err != nil {
		t.Fatalf("watch: %v", err)
	}
	if _, _, err := admitPolicy(m, user("root", "system:masters"), "GET", "/api/v1/pods"); err != nil {
		t.Fatalf("masters: %v", err)
	}
	d1()
	d2()
	if r, w := m.InFlight(); r != 0 || w != 0 {
		t.Fatalf("in flight after done: %d %d", r, w)
	}
}

func admitPolicy(p Interface, u *authn.User, method, target string) (http.Header, func(), error) {
	r := httptest.NewRequest(method, target, nil)
	ctx := request.WithInfo(authn.WithUser(r.Context(), u), request.DefaultResolver.Resolve(r))
	w := httptest.NewRecorder()
	done, err := p.Admit(w, r.WithContext(ctx))
	return w.Header(), done, err
}

func TestValidation(t *testing.T) {
	schemas, levels := DefaultConfiguration()
	for _, fs := range schemas {
		if errs := ValidateFlowSchema(fs); len(errs) > 0 {
			t.Errorf("default schema %s: %v", fs.Name, errs)
		}
	}
	for _, pl := range levels {
		if errs := ValidatePriorityLevel(pl); len(errs) > 0 {
			t.Errorf("default level %s: %v", pl.Name, errs)
		}
	}
	bad := &PriorityLevelConfiguration{ObjectMeta: meta.ObjectMeta{Name: "x"}, Spec: PriorityLevelConfigurationSpec{Type: PriorityLevelEnablementLimited,
		Limited: &LimitedPriorityLevelConfiguration{LimitResponse: LimitResponse{Type: LimitResponseTypeQueue, Queuing: &QueuingConfiguration{Queues: 128, HandSize: 10, QueueLengthLimit: 1}}}}}
	if errs := ValidatePriorityLevel(bad); len(errs) != 1 {
		t.Errorf("128 queues and hands of 10: %v", errs)
	}
	badFS := &FlowSchema{Spec: FlowSchemaSpec{MatchingPrecedence: 20000, Rules: []PolicyRulesWithSubjects{{}}}}
	if errs := ValidateFlowSchema(badFS); len(errs) != 4 {
		t.Errorf("bad flow schema: %v", errs)
	}
}

// BenchmarkAdmit is the dispatch path of one request by an authenticated
// user on the default configuration: classification, estimation, a seat
// taken and given back.
func BenchmarkAdmit(b *testing.B) {
	a, err := NewAPF(APFConfig{ServerConcurrencyLimit: 600})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/apis/wardle.example.com/v1beta1/namespaces/ns/flunders/f", nil)
	ctx := request.WithInfo(authn.WithUser(r.Context(), user("alice", "devs")), request.DefaultResolver.Resolve(r))
	r = r.WithContext(ctx)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := httptest.NewRecorder()
		for pb.Next() {
			done, err := a.Admit(w, r)
			if err != nil {
				b.Fatal(err)
			}
			done()
		}
	})
}
