package etcd3

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactRevKey is the key kube-apiserver's compactors coordinate
// through; apikit uses the same one, so that apikit servers and
// kube-apiservers sharing an etcd compact it once per interval between
// them.
const compactRevKey = "compact_rev_key"

// RunCompactor compacts etcd's history every interval until ctx ends, as
// kube-apiserver does: each round compacts to the revision seen one
// interval earlier, so that history spans at least one interval. Several
// servers may run it against one cluster: a compare-and-swap on the
// version of compact_rev_key lets one of them compact per round and makes
// the others skip it. Failures are logged with slog.Default and retried at
// the next interval.
func RunCompactor(ctx context.Context, client *clientv3.Client, interval time.Duration) {
	var version, rev int64
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		timer.Reset(interval)
		var err error
		version, rev, err = compact(ctx, client, version, rev)
		if err != nil && ctx.Err() == nil {
			slog.Default().Warn("etcd compaction failed", "revision", rev, "err", err)
		}
	}
}

// compact runs one round. version is the version of compact_rev_key this
// server saw in the last round, rev the revision it saw then. If no other
// server moved the key since, this one bumps it, recording the current
// revision, and compacts to rev; otherwise it adopts the key's version and
// leaves compaction to the server that moved it. It returns the version and
// revision for the next round.
func compact(ctx context.Context, client *clientv3.Client, version, rev int64) (int64, int64, error) {
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(rev, 10))). // bumps the version
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return version, rev, err
	}
	curRev := resp.Header.Revision
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			// Someone deleted the key: start over from version 0.
			return 0, curRev, nil
		}
		return kvs[0].Version, curRev, nil
	}
	if rev == 0 {
		// The first round only records where history starts.
		return version + 1, curRev, nil
	}
	if _, err := client.Compact(ctx, rev); err != nil {
		return version + 1, curRev, err
	}
	slog.Default().Debug("etcd compacted", "revision", rev)
	return version + 1, curRev, nil
}
