package authz

import (
	"context"
	"fmt"
	"strings"
)

// PrivilegedGroups allows every request of a member of any of groups and
// has no opinion on others. kube-apiserver puts it first in its chain with
// system:masters (authn.SystemPrivilegedGroup): its members may do
// anything whatever the authorization modes say, which is what keeps an
// administrator able to repair a broken RBAC policy.
func PrivilegedGroups(groups ...string) Authorizer {
	set := make(map[string]bool, len(groups))
	for _, g := range groups {
		set[g] = true
	}
	return Func(func(_ context.Context, a Attributes) (Decision, string, error) {
		if a.User == nil {
			return DecisionNoOpinion, "", nil
		}
		for _, g := range a.User.Groups {
			if set[g] {
				return DecisionAllow, "", nil
			}
		}
		return DecisionNoOpinion, "", nil
	})
}

// AlwaysAllowPaths allows any user (anonymous ones included) every
// non-resource request whose path is one of paths, where a path ending in
// "*" matches every path it prefixes ("/healthz/*"); it has no opinion on
// anything else. It is --authorization-always-allow-paths. A "*" anywhere
// but at the end is an error.
func AlwaysAllowPaths(paths ...string) (Authorizer, error) {
	exact := map[string]bool{}
	var prefixes []string
	for _, p := range paths {
		trimmed := strings.TrimSuffix(p, "*")
		if strings.Contains(trimmed, "*") {
			return nil, fmt.Errorf("only trailing * allowed in %q", p)
		}
		if trimmed != p {
			prefixes = append(prefixes, trimmed)
		} else {
			exact[p] = true
		}
	}
	return Func(func(_ context.Context, a Attributes) (Decision, string, error) {
		if a.ResourceRequest {
			return DecisionNoOpinion, "", nil
		}
		if exact[a.Path] {
			return DecisionAllow, "", nil
		}
		for _, p := range prefixes {
			if strings.HasPrefix(a.Path, p) {
				return DecisionAllow, "", nil
			}
		}
		return DecisionNoOpinion, "", nil
	}), nil
}
