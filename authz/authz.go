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
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// Func adapts a function to Authorizer.
type Func func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f Func) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// AlwaysAllow allows everything.
func AlwaysAllow() Authorizer {
	return Func(func(context.Context, Attributes) (Decision, string, error) {
		return DecisionAllow, "", nil
	})
}

// AlwaysDeny denies everything.
func AlwaysDeny() Authorizer {
	return Func(func(context.Context, Attributes) (Decision, string, error) {
		return DecisionDeny, "Everything is forbidden.", nil
	})
}
