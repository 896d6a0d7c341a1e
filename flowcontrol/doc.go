// Package flowcontrol decides whether and when each request runs: it is
// the policy behind the server's flow-control filter, which sits after
// authentication and before authorization (429 with Retry-After when the
// server is overloaded).
//
// Two policies implement Interface, as in kube-apiserver:
//
//   - MaxInFlight: at most --max-requests-inflight read-only and
//     --max-mutating-requests-inflight mutating requests at once, the next
//     refused at once; watches and system:masters are exempt.
//   - APF, API Priority and Fairness (--enable-priority-and-fairness, the
//     default): FlowSchema objects classify requests by user, group,
//     service account, verb, resource and non-resource path into
//     PriorityLevelConfiguration objects and flows; every level gets a
//     share of the server's concurrency (the sum of both in-flight flags),
//     lends what it does not use and borrows what others do not; within a
//     level, fair queuing with shuffle sharding keeps a heavy flow from
//     starving light ones; a request waits at most the request wait limit.
//     A request's cost in seats is estimated: a list by the objects it
//     will return, a write by the watchers its event reaches, a watch only
//     while it sends its initial events.
//
// The types of flowcontrol.apiserver.k8s.io/v1, their defaults and
// validation and kube-apiserver's default configuration live here too;
// package flowcontrol/resources serves them as API resources and keeps an
// APF in step with them. The package depends on meta, request and authn
// only; the server wires it in.
package flowcontrol
