// Package structuraldiff holds apikit's schema/structural to kube-apiserver's
// own code (k8s.io/apiextensions-apiserver v0.37, in the same process): the
// same CRD schemas and custom resources go through both, and what each
// reports (validation errors, pruned paths, CRD schema errors) and produces
// (pruned and defaulted objects) must match message for message. It runs
// with the other end-to-end tests: cd e2e && go test ./structuraldiff/.
package structuraldiff
