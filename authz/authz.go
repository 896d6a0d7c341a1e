package authz

import (
	"context"

	"github.com/apikit-dev/apikit/authn"
)

// Decision is an authorizer's answer.
type Decision int

// Decisions. NoOpinion lets the next authorizer in a chain decide.
const (
	DecisionNoOpinion Decision = iota
	DecisionAllow
	DecisionDeny
)

// String returns the decision's name.
func (d Decision) String() string {
	switch d {
	case DecisionAllow:
		return "Allow"
	case DecisionDeny:
		return "Deny"
	default:
		return "NoOpinion"
	}
}

// Attributes describe what a request asks to do.
type Attributes struct {
	User            *authn.User
	Verb            string
	ResourceRequest bool
	// Resource requests.
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Non-resource requests.
	Path string
}

// Authorizer decides on requests.
//
// An authorizer that cannot decide (a webhook that does not answer) returns
// an error and, usually, DecisionNoOpinion; the server answers 500 unless
// another authorizer allows the request.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// Func adapts a function to Authorizer.
type Func func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f Func) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// ResourceRuleInfo is what a user may do on resources: any of Verbs on any
// of Resources in any of APIGroups, limited to ResourceNames when there are
// any. "*" matches everything in each list.
type ResourceRuleInfo struct {
	Verbs         []string
	APIGroups     []string
	Resources     []string
	ResourceNames []string
}

// NonResourceRuleInfo is what a user may do on non-resource paths. A path
// ending in "*" matches every path it prefixes.
type NonResourceRuleInfo struct {
	Verbs           []string
	NonResourceURLs []string
}

// RuleResolver lists what a user may do in a namespace (cluster-wide rules
// included): what SelfSubjectRulesReview, and so `kubectl auth can-i
// --list`, answers. incomplete is true when the resolver cannot list
// everything the authorizer would allow (a webhook, for instance); err,
// which may come with partial rules, says why.
type RuleResolver interface {
	RulesFor(ctx context.Context, u *authn.User, namespace string) (resource []ResourceRuleInfo, nonResource []NonResourceRuleInfo, incomplete bool, err error)
}

// alwaysAllow allows everything and says so to rule reviews.
type alwaysAllow struct{}

// AlwaysAllow allows everything. It is also a RuleResolver that lists "*"
// rules for everyone.
func AlwaysAllow() Authorizer { return alwaysAllow{} }

func (alwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionAllow, "", nil
}

func (alwaysAllow) RulesFor(context.Context, *authn.User, string) ([]ResourceRuleInfo, []NonResourceRuleInfo, bool, error) {
	return []ResourceRuleInfo{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		[]NonResourceRuleInfo{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false, nil
}

// alwaysDeny denies everything and lists no rules.
type alwaysDeny struct{}

// AlwaysDeny denies everything. It is also a RuleResolver that lists no
// rules, completely.
func AlwaysDeny() Authorizer { return alwaysDeny{} }

func (alwaysDeny) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionDeny, "Everything is forbidden.", nil
}

func (alwaysDeny) RulesFor(context.Context, *authn.User, string) ([]ResourceRuleInfo, []NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}
