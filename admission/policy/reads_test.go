package policy

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/admission/policyset/policysettest"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authz"
)

// TestUnreadVariables: request and authorizer are built for a write only
// when one of the policy's expressions reads them. Each must be there
// whichever of the policy's expressions reads it (a validation, a
// messageExpression, a matchCondition, a variable, an audit annotation),
// and what one policy sets on the write's variables (its variables, its
// lack of request) must not reach the next policy evaluated on it: every
// case gives the same answer alone and after a policy that reads object
// alone and declares a variable of the same name.
func TestUnreadVariables(t *testing.T) {
	mayDelete := authz.Func(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.Verb == "delete" {
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionDeny, "", nil
	})
	small := registration.Validation{Expression: "object.spec.size < 10", Message: "small"}
	for _, tc := range []struct {
		name           string
		set            func(*registration.ValidatingAdmissionPolicy)
		wantMsg        string
		wantAnnotation string
	}{
		{name: "validation reads request", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []registration.Validation{{Expression: "request.userInfo.username == 'bob'", Message: "not bob"}}
		}, wantMsg: "not bob"},
		{name: "messageExpression reads request", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []registration.Validation{{Expression: small.Expression, MessageExpression: "'by ' + request.userInfo.username"}}
		}, wantMsg: "by alice"},
		{name: "matchCondition reads request", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []registration.MatchCondition{{Name: "alice", Expression: "request.userInfo.username == 'alice'"}}
		}, wantMsg: "small"},
		{name: "variable reads request", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []registration.Variable{{Name: "user", Expression: "request.userInfo.username"}}
			p.Spec.Validations = []registration.Validation{{Expression: "variables.user == 'bob'", MessageExpression: "variables.user + ' is not bob'"}}
		}, wantMsg: "alice is not bob"},
		{name: "audit annotation reads request", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []registration.Validation{{Expression: "true"}}
			p.Spec.AuditAnnotations = []registration.AuditAnnotation{{Key: "user", ValueExpression: "request.userInfo.username"}}
		}, wantAnnotation: "alice"},
		{name: "validation reads authorizer", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []registration.Validation{{Expression: "!authorizer.group('example.com').resource('widgets').check('delete').allowed()", Message: "may delete"}}
		}, wantMsg: "may delete"},
		{name: "validation reads authorizer.requestResource", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []registration.Validation{{Expression: "!authorizer.requestResource.check('delete').allowed()", Message: "may delete"}}
		}, wantMsg: "may delete"},
		{name: "variable reads authorizer", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []registration.Variable{{Name: "get", Expression: "authorizer.requestResource.check('get').allowed()"}}
			p.Spec.Validations = []registration.Validation{{Expression: "variables.get", Message: "may not get"}}
		}, wantMsg: "may not get"},
		{name: "another policy's variable is not seen", set: func(p *registration.ValidatingAdmissionPolicy) {
			p.Spec.Validations = []registration.Validation{{Expression: "variables.user == 'eve'", Message: "sees eve"}}
		}, wantMsg: "expression 'variables.user == 'eve'' resulted in error: no such attribute(s): variables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := newPolicy("reader", small)
			tc.set(reader)
			// Named to be evaluated first: reads object alone, and sets
			// a variable user.
			first := newPolicy("a-first", registration.Validation{Expression: "object.spec.size < 100 && variables.user == 'eve'"})
			first.Spec.Variables = []registration.Variable{{Name: "user", Expression: "'eve'"}}
			for _, ps := range [][]*registration.ValidatingAdmissionPolicy{{reader}, {first, reader}} {
				var bs []*registration.ValidatingAdmissionPolicyBinding
				for _, p := range ps {
					bs = append(bs, newBinding(p.Name+"-b", p.Name, registration.Deny))
				}
				p := newPlugin(t, ps, bs)
				p.cfg.Authorizer = mayDelete
				rec := audit.NewRecorder(audit.Event{})
				err := p.Validate(audit.WithRecorder(context.Background(), rec), attrs(12, nil))
				checkReaderDenial(t, len(ps), err, tc.wantMsg)
				if a := rec.Snapshot().Annotations["reader/user"]; a != tc.wantAnnotation {
					t.Errorf("%d policies: annotation %q, want %q", len(ps), a, tc.wantAnnotation)
				}
			}
		})
	}
}

// TestUnreadParamsAndNamespace: params and namespaceObject are set on the
// write's variables only for a policy that reads them; one that does must
// not see another policy's (its params null, its binding having no
// paramRef), alone or after a policy with params, on a server serving
// namespaces.
func TestUnreadParamsAndNamespace(t *testing.T) {
	s := policysettest.New(t, true)
	s.Namespace(t, "default", map[string]string{"env": "prod"})
	s.ConfigMap(t, "default", "limits", nil, map[string]string{"max": "10"})
	first := newParamPolicy("a-first", &registration.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
		registration.Validation{Expression: "params.data.max == '10' && namespaceObject.metadata.name == 'default'"})
	firstB := withParamRef(newBinding("a-first-b", "a-first", registration.Deny), registration.ParamRef{Name: "limits"})
	for _, tc := range []struct {
		name    string
		v       registration.Validation
		wantMsg string
	}{
		{name: "params null without a paramRef", v: registration.Validation{Expression: "params == null", Message: "sees params"}},
		{name: "params read by a messageExpression", v: registration.Validation{Expression: "object.spec.size < 10",
			MessageExpression: "params == null ? 'no params' : 'params'"}, wantMsg: "no params"},
		{name: "namespaceObject read by a messageExpression", v: registration.Validation{Expression: "object.spec.size < 10",
			MessageExpression: "'in ' + namespaceObject.metadata.name"}, wantMsg: "in default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader := newParamPolicy("reader", &registration.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, tc.v)
			readerB := newBinding("reader-b", "reader", registration.Deny)
			for _, ps := range [][]*registration.ValidatingAdmissionPolicy{{reader}, {first, reader}} {
				bs := []*registration.ValidatingAdmissionPolicyBinding{readerB}
				if len(ps) == 2 {
					bs = append(bs, firstB)
				}
				p, _ := paramPlugin(t, s, ps, bs)
				err := p.Validate(context.Background(), attrs(12, nil))
				checkReaderDenial(t, len(ps), err, tc.wantMsg)
			}
		})
	}
}

// checkReaderDenial checks that err is the 'reader' policy's denial with
// message wantMsg, or nil when wantMsg is empty; n names the case.
func checkReaderDenial(t *testing.T, n int, err error, wantMsg string) {
	t.Helper()
	got := ""
	if err != nil {
		got = err.Error()
	}
	want := ""
	if wantMsg != "" {
		want = `widgets.example.com "w1" is forbidden: ValidatingAdmissionPolicy 'reader' with binding 'reader-b' denied request: ` + wantMsg
	}
	if got != want {
		t.Errorf("%d policies: got %q\nwant %q", n, got, want)
	}
}
