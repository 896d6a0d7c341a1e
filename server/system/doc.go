// Package system installs the APIs every Kubernetes-style server serves
// besides its own, with the post-start hooks that keep them running:
// authentication.k8s.io (SelfSubjectReview, TokenReview),
// authorization.k8s.io (the access and rules reviews),
// rbac.authorization.k8s.io (the objects, their bootstrap policy, and the
// index the RBAC authorizer reads) and flowcontrol.apiserver.k8s.io (the
// priority and fairness configuration, applied as it changes).
//
// It sits beside server, which knows none of these: a program that builds
// a server from Go code assembles its storage with storage/backend, calls
// Defaults on its server.Config and Install on the server, and gets what
// the options package (which calls the same functions from flags) gives a
// command.
package system
