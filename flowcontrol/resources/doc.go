// Package resources serves the flowcontrol.apiserver.k8s.io/v1 API —
// FlowSchema and PriorityLevelConfiguration, each with a status
// subresource — from registry stores, and keeps a flowcontrol.APF in step
// with it:
//
//   - API.Ensure is kube-apiserver's configuration producer: it creates
//     the mandatory objects (exempt, catch-all) and keeps their spec, and
//     creates the suggested ones, updating those whose
//     apf.kubernetes.io/autoupdate-spec annotation is "true" and deleting
//     those no longer suggested.
//   - API.Run watches both resources and applies every change to the APF
//     at once, sets each FlowSchema's Dangling condition, and restores a
//     mandatory object someone deleted.
//   - TrackObjectCounts keeps the APF's object counts (list cost) current.
//
// The options package installs all of it into the outermost server
// (InstallSystemAPIs) when priority and fairness is on.
package resources
