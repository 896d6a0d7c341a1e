// Package options turns command-line flags into a server.Config, the way
// kube-apiserver does: the same flag names, defaults, checks and error
// messages, so that operators who know kube-apiserver know an apikit
// server.
//
// ServerRunOptions groups the flags by concern (secure serving, generic,
// etcd, authentication, service accounts, authorization, audit, flow
// control, API enablement, misc, logs; and, when a program sets
// ServerRunOptions.Aggregator, the aggregator's). Each group has AddFlags,
// Validate and ApplyTo (AggregatorOptions has Config, for server/aggregator).
// The flow is
//
//	o := options.NewServerRunOptions()   // defaults
//	o.Flags()                            // bind the flags, parse
//	completed, err := o.Complete()       // validate everything, derive the rest
//	completed.ApplyTo(cfg)               // onto a *server.Config
//
// Complete reports every invalid flag at once; only what it returns can be
// applied. NewServerCommand wraps the whole flow, with storage, signal
// handling and --help sections, in a cobra command (with a token
// subcommand that mints bearer tokens): an example server's main is a few
// lines. docs/options.md describes every flag, docs/authentication.md the
// authentication ones, docs/aggregation.md the delegated mode
// (--authentication-kubeconfig, --authorization-kubeconfig) and the
// aggregator's.
package options
