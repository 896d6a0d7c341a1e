// Package e2e holds apikit's end-to-end tests: they build the example
// servers from this checkout, start them as processes on loopback (on the
// embedded etcd, or on an etcd process the tests start), and drive them with
// kubectl and client-go, as users do.
//
// It is a module of its own so that client-go stays out of apikit's
// dependencies. Run it with `cd e2e && go test ./...` (./test.sh does).
package e2e
