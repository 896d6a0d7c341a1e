// Package embedded runs a single-node etcd inside the apikit process, the
// default storage of an apikit server: data persists in a directory and
// survives restarts, with nothing else to install or run.
//
// The server listens only on loopback (its peer port, picked by the
// system, is never dialed: there are no peers), and apikit talks to it
// through an in-process client that bypasses the network. Every
// acknowledged write is fsynced to etcd's write-ahead log, so it survives
// the process being killed. etcd's periodic compactor bounds the history,
// like kube-apiserver's compactor does.
//
// Use Start, then hand Client to etcd3.New (or call Storage).
//
// A program that stores only in an etcd cluster can leave the etcd server
// out of its binary: built with -tags apikit_noembed, this package links
// none (for examples/wardle, 16 modules and about 5.5 MB fewer), Built is
// false and Start returns ErrNotBuilt.
package embedded
