package authz

import (
	"context"

	"github.com/apikit-dev/apikit/metrics"
)

// Instrumented counts a's terminal decisions in the request's metrics
// registry (apiserver_authorization_decisions_total{type, name, decision}),
// as kube-apiserver instruments each authorizer of its chain. typ is the
// authorizer's kind ("RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny") and
// name its name in the configuration. A RuleResolver stays one.
func Instrumented(a Authorizer, typ, name string) Authorizer {
	i := instrumented{a: a, typ: typ, name: name}
	if r, ok := a.(RuleResolver); ok {
		return instrumentedResolver{i, r}
	}
	return i
}

type instrumented struct {
	a         Authorizer
	typ, name string
}

func (i instrumented) Authorize(ctx context.Context, attrs Attributes) (Decision, string, error) {
	d, reason, err := i.a.Authorize(ctx, attrs)
	switch d {
	case DecisionAllow:
		metrics.From(ctx).ObserveAuthorizationDecision(i.typ, i.name, metrics.AuthzAllowed)
	case DecisionDeny:
		metrics.From(ctx).ObserveAuthorizationDecision(i.typ, i.name, metrics.AuthzDenied)
	}
	return d, reason, err
}

type instrumentedResolver struct {
	instrumented
	RuleResolver
}
