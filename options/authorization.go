package options

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/authz/rbac"
	"github.com/apikit-dev/apikit/authz/webhook"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/system"
	"github.com/apikit-dev/apikit/storage"
)

// Authorization modes (--authorization-mode).
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeRBAC        = "RBAC"
	ModeWebhook     = "Webhook"
)

// modeNames lists the modes in --help order.
func modeNames() []string { return []string{ModeAlwaysAllow, ModeAlwaysDeny, ModeRBAC, ModeWebhook} }

// AuthorizationOptions choose how the server decides what callers may do.
//
// The chain the server asks is, in order: the always-allowed paths, the
// privileged group system:masters, then each of Modes; the first that
// allows or denies decides, and a request nobody decides is forbidden.
// The default mode is RBAC: a new server lets its administrator (the
// development PKI's admin certificate is in system:masters) do anything,
// every authenticated user discover the API and ask what they may do, and
// nobody else anything until a role is bound to them.
type AuthorizationOptions struct {
	// Modes are asked in order; the first with an opinion decides.
	Modes []string
	// AlwaysAllowPaths are non-resource paths anyone may request (a
	// trailing "*" matches a prefix): the health endpoints by default.
	AlwaysAllowPaths []string
	// WebhookConfigFile is the kubeconfig of the Webhook mode's server.
	WebhookConfigFile string
	// RemoteKubeconfigFile is the kubeconfig of the front server this one
	// is delegated from (--authorization-kubeconfig): after the modes, it
	// is asked with a SubjectAccessReview (its user needs
	// system:auth-delegator), with the webhook cache durations.
	RemoteKubeconfigFile string
	// WebhookCacheAuthorizedTTL and WebhookCacheUnauthorizedTTL are how
	// long the Webhook mode caches allowed and other answers.
	WebhookCacheAuthorizedTTL, WebhookCacheUnauthorizedTTL time.Duration
	// RBACPolicy is what the RBAC mode creates at every start, keeping
	// what users changed (rbac.Reconcile): rbac.DefaultPolicy() by
	// default. Programs add the ClusterRoles of their own API (labelled
	// rbac.AggregateToView/Edit/Admin to extend view, edit and admin).
	// Not a flag.
	RBACPolicy rbac.Policy

	// Set by Complete.

	// WebhookKubeconfig is WebhookConfigFile, read; RemoteKubeconfig is
	// RemoteKubeconfigFile.
	WebhookKubeconfig, RemoteKubeconfig certs.Kubeconfig

	// Set by ApplyTo.

	// Authorizer is the chain the server asks; RuleResolver lists rules
	// for SelfSubjectRulesReview. BuildAuthorizer makes both.
	Authorizer   authz.Authorizer
	RuleResolver authz.RuleResolver
	// RBACIndex holds the RBAC policy in memory; the rbac/bootstrap-roles
	// post-start hook fills it and keeps it current. Nil without RBAC.
	RBACIndex *rbac.Index

	rbacAuthorizer *rbac.Authorizer
	storage        storage.Factory
}

// NewAuthorizationOptions returns the defaults: RBAC, the health endpoints
// always allowed, and kube-apiserver's webhook cache durations.
func NewAuthorizationOptions() *AuthorizationOptions {
	return &AuthorizationOptions{
		Modes:                       []string{ModeRBAC},
		AlwaysAllowPaths:            []string{"/healthz", "/readyz", "/livez"},
		WebhookCacheAuthorizedTTL:   5 * time.Minute,
		WebhookCacheUnauthorizedTTL: 30 * time.Second,
		RBACPolicy:                  rbac.DefaultPolicy(),
	}
}

// AddFlags adds the authorization flags.
func (o *AuthorizationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Modes, "authorization-mode", o.Modes,
		"Ordered list of plug-ins to do authorization on secure port. Members of system:masters are always allowed. Comma-delimited list of: "+strings.Join(modeNames(), ",")+".")
	fs.StringSliceVar(&o.AlwaysAllowPaths, "authorization-always-allow-paths", o.AlwaysAllowPaths,
		"A list of HTTP paths to skip during authorization, i.e. these are authorized for anyone. A trailing * matches every path it prefixes.")
	fs.StringVar(&o.WebhookConfigFile, "authorization-webhook-config-file", o.WebhookConfigFile,
		"File with webhook configuration in kubeconfig format, used with --authorization-mode=Webhook. "+
			"The API server will query the remote service to determine access on the API server's secure port.")
	fs.StringVar(&o.RemoteKubeconfigFile, "authorization-kubeconfig", o.RemoteKubeconfigFile,
		"kubeconfig file pointing at the 'core' kubernetes server with enough rights to create subjectaccessreviews.authorization.k8s.io. "+
			"Requests the authorization modes do not allow are then asked of that server. If empty, the server runs standalone.")
	fs.DurationVar(&o.WebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", o.WebhookCacheAuthorizedTTL,
		"The duration to cache 'authorized' responses from the webhook authorizer.")
	fs.DurationVar(&o.WebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", o.WebhookCacheUnauthorizedTTL,
		"The duration to cache 'unauthorized' responses from the webhook authorizer.")
}

// Validate checks the flags, with kube-apiserver's messages.
func (o *AuthorizationOptions) Validate() []error {
	var errs []error
	if len(o.Modes) == 0 {
		errs = append(errs, errors.New("at least one authorization-mode must be passed"))
	}
	seen := map[string]bool{}
	dup := false
	for _, m := range o.Modes {
		if !slices.Contains(modeNames(), m) {
			errs = append(errs, fmt.Errorf("authorization-mode %q is not a valid mode", m))
		}
		dup = dup || seen[m]
		seen[m] = true
	}
	if dup {
		errs = append(errs, fmt.Errorf("authorization-mode %q has mode specified more than once", o.Modes))
	}
	if seen[ModeWebhook] && o.WebhookConfigFile == "" {
		errs = append(errs, errors.New("authorization-mode Webhook's authorization config file not passed"))
	}
	if o.WebhookConfigFile != "" && !seen[ModeWebhook] {
		errs = append(errs, errors.New("cannot specify --authorization-webhook-config-file without mode Webhook"))
	}
	if o.WebhookCacheAuthorizedTTL < 0 {
		errs = append(errs, errors.New("--authorization-webhook-cache-authorized-ttl can not be negative value"))
	}
	if o.WebhookCacheUnauthorizedTTL < 0 {
		errs = append(errs, errors.New("--authorization-webhook-cache-unauthorized-ttl can not be negative value"))
	}
	if _, err := authz.AlwaysAllowPaths(o.AlwaysAllowPaths...); err != nil {
		errs = append(errs, fmt.Errorf("--authorization-always-allow-paths: %w", err))
	}
	return errs
}

// loadWebhookConfig reads --authorization-webhook-config-file and
// --authorization-kubeconfig.
func (o *AuthorizationOptions) loadWebhookConfig() error {
	if o.RemoteKubeconfigFile != "" {
		k, err := certs.ReadKubeconfig(o.RemoteKubeconfigFile)
		if err == nil {
			_, err = k.ClientTLSConfig()
		}
		if err != nil {
			return fmt.Errorf("--authorization-kubeconfig: %w", err)
		}
		o.RemoteKubeconfig = k
	}
	if o.WebhookConfigFile == "" || !o.hasMode(ModeWebhook) {
		return nil
	}
	k, err := certs.ReadKubeconfig(o.WebhookConfigFile)
	if err != nil {
		return fmt.Errorf("--authorization-webhook-config-file: %w", err)
	}
	if _, err := k.ClientTLSConfig(); err != nil {
		return fmt.Errorf("--authorization-webhook-config-file %s: %w", o.WebhookConfigFile, err)
	}
	o.WebhookKubeconfig = k
	return nil
}

// hasMode reports whether mode is among the modes.
func (o *AuthorizationOptions) hasMode(mode string) bool { return slices.Contains(o.Modes, mode) }

// BuildAuthorizer returns the server's authorizer and rule resolver, as
// kube-apiserver's BuildAuthorizer does: the union of the always-allowed
// paths, system:masters, the modes in order and, with
// --authorization-kubeconfig, the front server (as sample-apiserver's
// delegated authorization), and the union of their rule resolvers. It
// makes the RBAC index (in RBACIndex), empty until the
// rbac/bootstrap-roles hook fills it.
func (o *AuthorizationOptions) BuildAuthorizer() (authz.Authorizer, authz.RuleResolver, error) {
	paths, err := authz.AlwaysAllowPaths(o.AlwaysAllowPaths...)
	if err != nil {
		return nil, nil, fmt.Errorf("--authorization-always-allow-paths: %w", err)
	}
	authorizers := []authz.Authorizer{paths, authz.PrivilegedGroups(authn.SystemPrivilegedGroup)}
	var resolvers []authz.RuleResolver
	for _, m := range o.Modes {
		var a authz.Authorizer
		switch m {
		case ModeAlwaysAllow:
			a = authz.AlwaysAllow()
		case ModeAlwaysDeny:
			a = authz.AlwaysDeny()
		case ModeRBAC:
			if o.RBACIndex == nil {
				o.RBACIndex = rbac.NewIndex()
			}
			o.rbacAuthorizer = rbac.NewAuthorizer(o.RBACIndex)
			a = o.rbacAuthorizer
		case ModeWebhook:
			w, err := webhook.New(webhook.Config{Kubeconfig: o.WebhookKubeconfig,
				AuthorizedTTL: o.WebhookCacheAuthorizedTTL, UnauthorizedTTL: o.WebhookCacheUnauthorizedTTL})
			if err != nil {
				return nil, nil, fmt.Errorf("--authorization-webhook-config-file: %w", err)
			}
			a = w
		default:
			return nil, nil, fmt.Errorf("authorization-mode %q is not a valid mode", m)
		}
		// Counted per authorizer under kube's type and name (the mode,
		// and the mode in lower case, as --authorization-mode names them).
		authorizers = append(authorizers, authz.Instrumented(a, m, strings.ToLower(m)))
		if r, ok := a.(authz.RuleResolver); ok {
			resolvers = append(resolvers, r)
		}
	}
	if o.RemoteKubeconfigFile != "" {
		k := o.RemoteKubeconfig
		k.Server = strings.TrimSuffix(k.Server, "/") + "/apis/authorization.k8s.io/v1/subjectaccessreviews"
		w, err := webhook.New(webhook.Config{Kubeconfig: k,
			AuthorizedTTL: o.WebhookCacheAuthorizedTTL, UnauthorizedTTL: o.WebhookCacheUnauthorizedTTL})
		if err != nil {
			return nil, nil, fmt.Errorf("--authorization-kubeconfig: %w", err)
		}
		authorizers = append(authorizers, w)
		resolvers = append(resolvers, w)
	}
	return authz.Union(authorizers...), authz.UnionRuleResolver(resolvers...), nil
}

// ApplyTo sets the server's authorizer (BuildAuthorizer's) and remembers
// its storage for the RBAC objects.
func (o *AuthorizationOptions) ApplyTo(c *server.Config) error {
	a, r, err := o.BuildAuthorizer()
	if err != nil {
		return err
	}
	o.Authorizer, o.RuleResolver = a, r
	c.Authorizer = a
	o.storage = c.Storage
	return nil
}

// InstallSystemAPIs serves authorization.k8s.io/v1 (the access and rules
// reviews kubectl auth can-i posts) and, with RBAC,
// rbac.authorization.k8s.io/v1 with the post-start hook
// rbac/bootstrap-roles, which reconciles RBACPolicy, then keeps the RBAC
// index current and aggregated ClusterRoles filled until the server stops;
// it is done, and /readyz passes, once the index holds the whole policy.
func (o *AuthorizationOptions) InstallSystemAPIs(s *server.GenericServer) error {
	if o.Authorizer == nil {
		return errors.New("authorization: InstallSystemAPIs before ApplyTo")
	}
	if err := system.InstallAuthorization(s, o.Authorizer, o.RuleResolver); err != nil {
		return err
	}
	if !o.hasMode(ModeRBAC) {
		return nil
	}
	return system.InstallRBAC(s, o.storage, o.Authorizer, &system.RBAC{Index: o.RBACIndex, Authorizer: o.rbacAuthorizer, Policy: o.RBACPolicy})
}
