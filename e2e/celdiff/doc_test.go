// Package celdiff holds apikit's CEL engine (package cel) to
// kube-apiserver's own code: the same x-kubernetes-validations compiled by
// both (errors and cost verdicts) and the same objects validated by both
// (messages), with k8s.io/apiextensions-apiserver v0.37 as the reference.
package celdiff
