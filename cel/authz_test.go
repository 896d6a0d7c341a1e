package cel

import (
	"context"
	"errors"
	"testing"

	"github.com/google/cel-go/common/types"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/cel/library"
)

func TestAuthorizerLibrary(t *testing.T) {
	var asked []authz.Attributes
	a := authz.Func(func(_ context.Context, at authz.Attributes) (authz.Decision, string, error) {
		asked = append(asked, at)
		switch {
		case at.Path == "/broken":
			return authz.DecisionNoOpinion, "", errors.New("webhook down")
		case at.User.Name == "alice" && at.Resource == "deployments" && at.Verb == "update":
			return authz.DecisionAllow, "alice may", nil
		case at.User.Name == "system:serviceaccount:ns1:sa" && at.Path == "/healthz" && at.Verb == "get":
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionDeny, "no", nil
	})
	c, err := NewCompiler(AdmissionVariables()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	alice := &authn.User{Name: "alice"}
	vars := map[string]any{
		AuthorizerVarName: library.NewAuthorizer(ctx, a, alice),
		RequestResourceVarName: library.NewResourceCheck(ctx, a, alice,
			authz.Attributes{APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "ns1", Name: "web"}),
	}
	tests := []struct {
		expr string
		want any
		// last is what the authorizer was asked last.
		last authz.Attributes
	}{{
		expr: "authorizer.group('apps').resource('deployments').namespace('ns1').name('web').check('update').allowed()",
		want: true,
		last: authz.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "apps", APIVersion: "*", Resource: "deployments", Namespace: "ns1", Name: "web"},
	}, {
		expr: "authorizer.group('apps').resource('deployments').subresource('scale').check('update').reason()",
		want: "alice may",
		last: authz.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "apps", APIVersion: "*", Resource: "deployments", Subresource: "scale"},
	}, {
		expr: "authorizer.requestResource.check('delete').allowed()",
		want: false,
		last: authz.Attributes{Verb: "delete", ResourceRequest: true, APIGroup: "apps", APIVersion: "*", Resource: "deployments", Namespace: "ns1", Name: "web"},
	}, {
		expr: "authorizer.serviceAccount('ns1', 'sa').path('/healthz').check('GET').allowed()",
		want: true,
		last: authz.Attributes{Verb: "get", Path: "/healthz"},
	}, {
		expr: "authorizer.path('/broken').check('get').errored() && authorizer.path('/broken').check('get').error() == 'webhook down'",
		want: true,
		last: authz.Attributes{Verb: "get", Path: "/broken"},
	}}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := c.Compile(tc.expr, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, cost, err := e.Eval(ctx, vars, PerCallLimit)
			if err != nil {
				t.Fatal(err)
			}
			if got.Equal(types.DefaultTypeAdapter.NativeToValue(tc.want)) != types.True {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if cost < 350000 {
				t.Fatalf("cost %d: a check costs kube's 350000", cost)
			}
			last := asked[len(asked)-1]
			last.User = nil
			if last != tc.last {
				t.Fatalf("authorizer asked %+v, want %+v", last, tc.last)
			}
		})
	}
	// Two checks fit the per-call limit, as kube sizes them; three do not.
	e, err := c.Compile("authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed() || authorizer.path('/c').check('get').allowed()", types.BoolType)
	if err != nil {
		t.Fatal(err)
	}
	if e.MaxCost <= PerCallLimit {
		t.Fatalf("estimated cost %d of three checks, want over %d", e.MaxCost, PerCallLimit)
	}
}
