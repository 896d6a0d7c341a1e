package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/mutatingpolicy"
	"github.com/apikit-dev/apikit/admission/policy"
	"github.com/apikit-dev/apikit/admission/registration"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/authn"
	authnreview "github.com/apikit-dev/apikit/authn/review"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/authz/rbac"
	authzreview "github.com/apikit-dev/apikit/authz/review"
	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/flowcontrol/resources"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
)

// Config says which system APIs a server serves and what they read.
type Config struct {
	// Storage holds the RBAC objects and the flow control configuration.
	// Required with RBAC or APF.
	Storage storage.Factory
	// Authorizer is the server's authorizer, which the access reviews ask;
	// RuleResolver answers SelfSubjectRulesReview (nil: no rules known).
	Authorizer   authz.Authorizer
	RuleResolver authz.RuleResolver
	// Tokens answers TokenReview, for APIAudiences when a review names
	// none; nil finds every token unauthenticated.
	Tokens       authn.TokenAuthenticator
	APIAudiences []string
	// RBAC, when set, serves rbac.authorization.k8s.io.
	RBAC *RBAC
	// APF, when set, serves flowcontrol.apiserver.k8s.io and applies the
	// stored configuration to it.
	APF *flowcontrol.APF
	// Webhooks, when set, serves admissionregistration.k8s.io's webhook
	// configurations and keeps the Source of the admission webhook
	// plugins equal to them.
	Webhooks *webhook.Source
	// Policies, when set, serves admissionregistration.k8s.io and keeps
	// the Source of the ValidatingAdmissionPolicy plugin equal to the
	// stored policies and bindings.
	Policies *policy.Source
	// MutatingPolicies, when set, serves admissionregistration.k8s.io and
	// keeps the Source of the MutatingAdmissionPolicy plugin equal to the
	// stored mutating policies and bindings.
	MutatingPolicies *mutatingpolicy.Source
}

// AdmissionPolicies returns kube-apiserver's ValidatingAdmissionPolicy
// plugin, configured by cfg, and the Source that
// InstallAdmissionRegistration keeps up to date (cfg.Source, set to a new
// one when nil).
func AdmissionPolicies(cfg policy.Config) (*policy.Source, *policy.Plugin, error) {
	if cfg.Source == nil {
		cfg.Source = policy.NewSource()
	}
	p, err := policy.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg.Source, p, nil
}

// AdmissionMutatingPolicies returns kube-apiserver's
// MutatingAdmissionPolicy plugin, configured by cfg, and the Source that
// InstallAdmissionRegistration keeps up to date (cfg.Source, set to a new
// one when nil).
func AdmissionMutatingPolicies(cfg mutatingpolicy.Config) (*mutatingpolicy.Source, *mutatingpolicy.Plugin, error) {
	if cfg.Source == nil {
		cfg.Source = mutatingpolicy.NewSource()
	}
	p, err := mutatingpolicy.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg.Source, p, nil
}

// AdmissionNamespaces is the namespace lookup of the admission plugins of
// c: c.AdmissionNamespaces as it is at each request, so that the plugins
// may be made before the build function that serves namespaces sets it.
func AdmissionNamespaces(c *server.Config) admission.NamespaceLabels {
	return admission.NamespaceLabelsFunc(func(ctx context.Context, name string) (map[string]string, error) {
		if c.AdmissionNamespaces == nil {
			return nil, nil // no namespaces served: every one unlabelled
		}
		return c.AdmissionNamespaces.NamespaceLabels(ctx, name)
	})
}

// AdmissionWebhooks returns kube-apiserver's MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook plugins, configured by cfg, and the Source
// that InstallAdmissionRegistration keeps up to date. cfg.Source is set
// to a new Source when nil, cfg.MatchConditions to package cel's
// evaluator.
func AdmissionWebhooks(cfg webhook.Config) (*webhook.Source, admission.Chain, error) {
	if cfg.Source == nil {
		cfg.Source = webhook.NewSource()
	}
	if cfg.MatchConditions == nil {
		mc, err := webhook.NewCELMatchConditions()
		if err != nil {
			return nil, nil, err
		}
		cfg.MatchConditions = mc
	}
	w, err := webhook.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg.Source, admission.Chain{w.Mutating(), w.Validating()}, nil
}

// RBAC is the RBAC mode: its index, the authorizer reading it, and the
// bootstrap policy reconciled at every start.
type RBAC struct {
	Index      *rbac.Index
	Authorizer *rbac.Authorizer
	Policy     rbac.Policy
}

// NewRBAC returns an empty index, its authorizer and kube-apiserver's
// default policy.
func NewRBAC() *RBAC {
	index := rbac.NewIndex()
	return &RBAC{Index: index, Authorizer: rbac.NewAuthorizer(index), Policy: rbac.DefaultPolicy()}
}

// DefaultAlwaysAllowPaths are the paths every caller may read, as
// kube-apiserver's --authorization-always-allow-paths default.
var DefaultAlwaysAllowPaths = []string{"/healthz", "/readyz", "/livez"}

// Defaults gives cfg kube-apiserver's default authorization (the health
// paths, then system:masters, then RBAC), priority and fairness (when
// cfg.EnablePriorityAndFairness, the default) and admission webhooks
// (appended to cfg.Admission), and returns the Config
// that Install needs for them, reading cfg.Storage. Call it before
// cfg.Complete; set Tokens on the result if the server authenticates
// bearer tokens.
func Defaults(cfg *server.Config) (Config, error) {
	if cfg.Storage == nil {
		return Config{}, errors.New("system: the server.Config has no Storage")
	}
	paths, err := authz.AlwaysAllowPaths(DefaultAlwaysAllowPaths...)
	if err != nil {
		return Config{}, err
	}
	r := NewRBAC()
	cfg.Authorizer = authz.Union(paths, authz.PrivilegedGroups(authn.SystemPrivilegedGroup), r.Authorizer)
	fc, err := server.DefaultFlowControl(cfg)
	if err != nil {
		return Config{}, err
	}
	cfg.FlowControl = fc
	apf, _ := fc.(*flowcontrol.APF)
	namespaces := AdmissionNamespaces(cfg)
	src, plugins, err := AdmissionWebhooks(webhook.Config{Namespaces: namespaces})
	if err != nil {
		return Config{}, err
	}
	psrc, vap, err := AdmissionPolicies(policy.Config{Authorizer: cfg.Authorizer, Namespaces: namespaces})
	if err != nil {
		return Config{}, err
	}
	msrc, map_, err := AdmissionMutatingPolicies(mutatingpolicy.Config{Authorizer: cfg.Authorizer, Namespaces: namespaces})
	if err != nil {
		return Config{}, err
	}
	// kube-apiserver's order: each kind of policy before its webhooks.
	cfg.Admission = append(cfg.Admission, map_, plugins[0], vap, plugins[1])
	return Config{Storage: cfg.Storage, Authorizer: cfg.Authorizer, RuleResolver: r.Authorizer, RBAC: r, APF: apf, Webhooks: src, Policies: psrc,
		MutatingPolicies: msrc}, nil
}

// Install serves the system APIs c names on s, the outermost server of
// its chain (a chain serves them once), with their post-start hooks.
func Install(s *server.GenericServer, c Config) error {
	if err := InstallAuthentication(s, c.Tokens, c.APIAudiences); err != nil {
		return err
	}
	if err := InstallAuthorization(s, c.Authorizer, c.RuleResolver); err != nil {
		return err
	}
	if c.RBAC != nil {
		if err := InstallRBAC(s, c.Storage, c.Authorizer, c.RBAC); err != nil {
			return err
		}
	}
	if c.APF != nil {
		if err := InstallFlowControl(s, c.Storage, c.APF); err != nil {
			return err
		}
	}
	if c.Webhooks != nil || c.Policies != nil || c.MutatingPolicies != nil {
		return InstallAdmissionRegistration(s, c.Storage, c.Webhooks, c.Policies, c.MutatingPolicies)
	}
	return nil
}

// InstallAdmissionRegistration serves admissionregistration.k8s.io/v1's
// MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
// ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
// MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding from f's
// storage and adds the post-start hook
// start-kube-apiserver-admission-initializer: it keeps src (the webhook
// configurations), policies and mutating (the policies and bindings),
// each when not nil, equal to the stored objects until the server stops
// (a change is in effect once this server's watch delivers it), and is
// done once all have synced.
func InstallAdmissionRegistration(s *server.GenericServer, f storage.Factory, src *webhook.Source, policies *policy.Source, mutating *mutatingpolicy.Source) error {
	if f == nil {
		return errors.New("admission webhooks: the server has no storage for their configurations")
	}
	stores, err := registration.NewStores(f)
	if err != nil {
		return fmt.Errorf("admissionregistration.k8s.io: %w", err)
	}
	policyStores, err := registration.NewPolicyStores(f)
	if err != nil {
		return fmt.Errorf("admissionregistration.k8s.io: %w", err)
	}
	mutatingStores, err := registration.NewMutatingPolicyStores(f)
	if err != nil {
		return fmt.Errorf("admissionregistration.k8s.io: %w", err)
	}
	resources := append(stores.Resources(), policyStores.Resources()...)
	resources = append(resources, mutatingStores.Resources()...)
	if err := s.InstallAPIGroup(server.NewAPIGroupInfo(registration.GroupName).AddVersion(registration.Version, resources...)); err != nil {
		return err
	}
	return s.AddPostStartHook("start-kube-apiserver-admission-initializer", func(ctx context.Context) error {
		log := slog.Default().With("hook", "start-kube-apiserver-admission-initializer")
		var synced []<-chan struct{}
		if src != nil {
			go src.Run(ctx, stores, log)
			synced = append(synced, src.Synced())
		}
		if policies != nil {
			go policies.Run(ctx, policyStores, servedResources{s}, log)
			synced = append(synced, policies.Synced())
		}
		if mutating != nil {
			go mutating.Run(ctx, mutatingStores, servedResources{s}, log)
			synced = append(synced, mutating.Synced())
		}
		for _, c := range synced {
			select {
			case <-c:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
}

// InstallAuthentication serves authentication.k8s.io/v1: SelfSubjectReview
// (kubectl auth whoami) and TokenReview (this server as another's token
// webhook).
func InstallAuthentication(s *server.GenericServer, tokens authn.TokenAuthenticator, apiAudiences []string) error {
	rs, err := authnreview.Resources(tokens, apiAudiences)
	if err != nil {
		return fmt.Errorf("authentication.k8s.io: %w", err)
	}
	return s.InstallAPIGroup(server.NewAPIGroupInfo(authnreview.GroupName).AddVersion(authnreview.Version, rs...))
}

// InstallAuthorization serves authorization.k8s.io/v1: the access reviews
// (kubectl auth can-i) asking a, and SelfSubjectRulesReview from r.
func InstallAuthorization(s *server.GenericServer, a authz.Authorizer, r authz.RuleResolver) error {
	if a == nil {
		return errors.New("authorization.k8s.io: no authorizer")
	}
	rs, err := authzreview.Resources(a, r)
	if err != nil {
		return fmt.Errorf("authorization.k8s.io: %w", err)
	}
	return s.InstallAPIGroup(server.NewAPIGroupInfo(authzreview.GroupName).AddVersion(authzreview.Version, rs...))
}

// InstallRBAC serves rbac.authorization.k8s.io/v1 from f's storage (writes
// authorized by a, escalation checked by r's authorizer) and adds the
// post-start hook rbac/bootstrap-roles: it reconciles r.Policy, then keeps
// r.Index equal to the stored objects until the server stops, and is done
// once the index has synced.
func InstallRBAC(s *server.GenericServer, f storage.Factory, a authz.Authorizer, r *RBAC) error {
	if f == nil {
		return errors.New("RBAC: the server has no storage for its roles and bindings")
	}
	stores, err := rbac.NewStores(f)
	if err != nil {
		return err
	}
	if err := s.InstallAPIGroup(server.NewAPIGroupInfo(rbac.GroupName).AddVersion(rbac.Version,
		stores.Resources(a, r.Authorizer)...)); err != nil {
		return err
	}
	index, policy := r.Index, r.Policy
	return s.AddPostStartHook("rbac/bootstrap-roles", func(ctx context.Context) error {
		log := slog.Default().With("hook", "rbac/bootstrap-roles")
		if err := reconcileWithRetry(ctx, stores, policy, log); err != nil {
			return err
		}
		go rbac.Sync(ctx, stores, index, log)
		go rbac.Aggregate(ctx, stores.ClusterRoles, index, log)
		select {
		case <-index.Synced():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// reconcileWithRetry reconciles the bootstrap policy, retrying for 30
// seconds while storage is not answering, as kube-apiserver does.
func reconcileWithRetry(ctx context.Context, stores *rbac.Stores, p rbac.Policy, log *slog.Logger) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := rbac.Reconcile(ctx, stores, p)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("unable to initialize roles: %w", err)
		}
		log.Info("reconciling the RBAC bootstrap policy failed; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// InstallFlowControl serves flowcontrol.apiserver.k8s.io/v1 from f's
// storage and apf's debug endpoints, and adds kube-apiserver's post-start
// hooks: priority-and-fairness-config-producer ensures the default
// configuration, priority-and-fairness-config-consumer applies the stored
// one to apf as it changes and tracks object counts (for list costs).
func InstallFlowControl(s *server.GenericServer, f storage.Factory, apf *flowcontrol.APF) error {
	if f == nil {
		return errors.New("priority and fairness: the server has no storage for its configuration")
	}
	api, err := resources.New(f)
	if err != nil {
		return fmt.Errorf("priority and fairness: %w", err)
	}
	if err := s.InstallAPIGroup(server.NewAPIGroupInfo(flowcontrol.GroupName).AddVersion(flowcontrol.Version, api.Resources()...)); err != nil {
		return err
	}
	if err := s.Handle(flowcontrol.DebugPathPrefix, apf.DebugHandler()); err != nil {
		return err
	}
	if err := s.AddPostStartHook("priority-and-fairness-config-producer", func(ctx context.Context) error {
		log := slog.Default().With("hook", "priority-and-fairness-config-producer")
		for {
			err := api.Ensure(ctx)
			if err == nil {
				return nil
			}
			log.Warn("ensuring the default configuration; retrying", "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}); err != nil {
		return err
	}
	return s.AddPostStartHook("priority-and-fairness-config-consumer", func(ctx context.Context) error {
		log := slog.Default().With("hook", "priority-and-fairness-config-consumer")
		go api.Run(ctx, apf, log)
		go resources.TrackObjectCounts(ctx, apf, func() []registry.Resource {
			var out []registry.Resource
			for _, g := range s.APIGroups() {
				for _, v := range g.Versions {
					out = append(out, v.Resources...)
				}
			}
			return out
		}, resources.DefaultCountPeriod, log)
		return nil
	})
}

// servedResources finds resources among those s and its delegates
// serve, looked up at each call: a CRD's custom resources are found once
// the extensions server serves them.
type servedResources struct{ s *server.GenericServer }

// find returns the first resource of group and version that match
// accepts; subresources are not resources here.
func (r servedResources) find(group, version string, match func(registry.ResourceInfo) bool) (registry.Resource, bool) {
	for _, g := range r.s.APIGroups() {
		if g.Name != group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version != version {
				continue
			}
			for _, res := range v.Resources {
				if info := res.Info(); !strings.Contains(info.Resource, "/") && match(info) {
					return res, true
				}
			}
		}
	}
	return nil, false
}

// ResourceFor implements policyset.Resources.
func (r servedResources) ResourceFor(kind meta.GroupVersionKind) (registry.Resource, bool) {
	return r.find(kind.Group, kind.Version, func(i registry.ResourceInfo) bool { return i.Kind == kind.Kind })
}

// WatchAPIGroups implements policyset.Notifying: the policy sources
// resolve paramKinds again when the chain's groups change instead of
// polling.
func (r servedResources) WatchAPIGroups(f func()) (stop func()) { return r.s.WatchAPIGroups(f) }

// ResourceOf implements policyset.Resources.
func (r servedResources) ResourceOf(gvr meta.GroupVersionResource) (registry.Resource, bool) {
	return r.find(gvr.Group, gvr.Version, func(i registry.ResourceInfo) bool { return i.Resource == gvr.Resource })
}
