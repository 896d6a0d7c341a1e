// Package library holds Kubernetes' CEL function libraries — lists, regex,
// URLs, IP addresses and CIDRs, quantities, formats and semantic versions —
// with the estimated and actual cost kube-apiserver charges for each call.
//
// The functions, their overload ids, results and error texts follow
// k8s.io/apiserver/pkg/cel/library, so a rule a CustomResourceDefinition or
// an admission policy writes for kube-apiserver compiles, costs and
// evaluates the same here. The package is written for apikit: the library
// module must not import k8s.io/apiserver.
package library
