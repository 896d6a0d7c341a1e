package authz_test

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/metrics"
)

type fixed struct{ d authz.Decision }

func (f fixed) Authorize(context.Context, authz.Attributes) (authz.Decision, string, error) {
	return f.d, "", nil
}

type resolving struct{ fixed }

func (resolving) RulesFor(context.Context, *authn.User, string) ([]authz.ResourceRuleInfo, []authz.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

// TestInstrumentedCountsTerminalDecisions: each authorizer of a chain
// counts its allows and denies under its type and name, not its
// no-opinions, as kube-apiserver's apiserver_authorization_decisions_total.
func TestInstrumentedCountsTerminalDecisions(t *testing.T) {
	reg := metrics.New()
	ctx := metrics.WithRoute(context.Background(), &metrics.Route{Registry: reg})
	chain := []struct {
		a         authz.Authorizer
		typ, name string
	}{
		{fixed{authz.DecisionNoOpinion}, "RBAC", "rbac"},
		{fixed{authz.DecisionAllow}, "Webhook", "webhook"},
		{fixed{authz.DecisionDeny}, "AlwaysDeny", "alwaysdeny"},
	}
	for _, c := range chain {
		a := authz.Instrumented(c.a, c.typ, c.name)
		for range 2 {
			if _, _, err := a.Authorize(ctx, authz.Attributes{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "apiserver_authorization_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got[l["type"]+"/"+l["name"]+"/"+l["decision"]] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"Webhook/webhook/allowed": 2, "AlwaysDeny/alwaysdeny/denied": 2}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if _, ok := authz.Instrumented(resolving{}, "RBAC", "rbac").(authz.RuleResolver); !ok {
		t.Error("an instrumented RuleResolver is no longer one")
	}
}
