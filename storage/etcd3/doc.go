// Package etcd3 is the storage.Interface on an etcd v3 cluster, through
// go.etcd.io/etcd/client/v3. It is what a production apikit server runs on
// with --etcd-servers, and what the embedded backend wraps.
//
// It writes values as given, under an optional key prefix (kube-apiserver's
// --etcd-prefix), and maps etcd's revisions one to one onto
// resourceVersions: Create is a transaction on mod_revision == 0,
// GuaranteedUpdate and Delete compare-and-swap on mod_revision, List reads
// pages at one revision, and Watch streams etcd's watch from a revision,
// with progress notifications as bookmarks.
//
// Dial connects to a cluster (endpoints, TLS files, dial timeout), and
// RunCompactor keeps etcd's history bounded the way kube-apiserver does.
// With DialMembers, WithMembers and WithAttemptTimeout the store survives
// the loss, freeze or restart of a member (failover.go, docs/failover.md):
// each try is bounded and goes to a member that is up, and a write tried
// again recognises its own earlier commit.
package etcd3
