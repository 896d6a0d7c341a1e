package rbac

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// AggregatedRules computes the rules of an aggregated ClusterRole from the
// others: for each selector in turn, the rules of the ClusterRoles it
// matches in name order, each rule once, as kube-controller-manager's
// clusterrole-aggregation controller does. ok is false when the role has
// no aggregation rule.
func AggregatedRules(role *ClusterRole, all []*ClusterRole) (rules []PolicyRule, ok bool) {
	if role.AggregationRule == nil {
		return nil, false
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b *ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules = []PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := role.AggregationRule.ClusterRoleSelectors[i].AsSelector()
		if err != nil {
			continue // validation refuses such selectors
		}
		for _, other := range sorted {
			if other.Name == role.Name || !sel.Matches(meta.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !slices.ContainsFunc(rules, func(x PolicyRule) bool { return ruleEqual(x, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, true
}

// Aggregate runs the aggregation controller until ctx ends: whenever a
// ClusterRole changes in index, every ClusterRole with an aggregation rule
// whose rules differ from AggregatedRules is updated in store. Failed
// updates (a conflict with a concurrent write) are retried on the next
// change or after a second.
func Aggregate(ctx context.Context, store *registry.Store[*ClusterRole], index *Index, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	<-index.Synced()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	for {
		if failed := aggregateOnce(ctx, store, index, log); failed {
			retry.Reset(time.Second)
		}
		select {
		case <-ctx.Done():
			retry.Stop()
			return
		case <-index.clusterRolesChanged:
		case <-retry.C:
		}
	}
}

// aggregateOnce brings every aggregated ClusterRole up to date; it reports
// whether an update failed.
func aggregateOnce(ctx context.Context, store *registry.Store[*ClusterRole], index *Index, log *slog.Logger) (failed bool) {
	all := index.ClusterRoles()
	for _, role := range all {
		rules, ok := AggregatedRules(role, all)
		if !ok || semanticRulesEqual(rules, role.Rules) {
			continue
		}
		_, _, err := store.Update(ctx, "", role.Name, func(_ context.Context, cur *ClusterRole) (*ClusterRole, error) {
			if cur == nil {
				return nil, meta.NewNotFound(ClusterRolesResource, role.Name) // deleted meanwhile
			}
			cur.Rules = rules
			return cur, nil
		}, registry.UpdateOptions{})
		if err != nil && !meta.IsNotFound(err) && ctx.Err() == nil {
			log.Warn("rbac: aggregating ClusterRole rules failed", "clusterRole", role.Name, "err", err)
			failed = true
		}
	}
	return failed
}
