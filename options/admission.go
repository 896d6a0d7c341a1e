package options

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/apikit-dev/apikit/admission/mutatingpolicy"
	"github.com/apikit-dev/apikit/admission/policy"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/aggregator"
	"github.com/apikit-dev/apikit/server/system"
	"github.com/apikit-dev/apikit/storage"
)

// SectionAdmission is the --help section of the admission flags.
const SectionAdmission = "admission"

// AdmissionOptions choose the admission plugins and configure them, as
// kube-apiserver's admission flags do.
type AdmissionOptions struct {
	// Plugins are the plugin names the flags may name: the webhook
	// plugins, and a program's compiled-in plugins (admission.Named),
	// which the program adds (wardle adds BanFlunder). All are enabled by
	// default.
	Plugins []string
	// EnablePlugins and DisablePlugins are --enable-admission-plugins and
	// --disable-admission-plugins.
	EnablePlugins, DisablePlugins []string
	// ConfigFile is --admission-control-config-file: an
	// AdmissionConfiguration.
	ConfigFile string
	// ServiceEndpoints are --service-endpoint values,
	// NAMESPACE/NAME[:PORT]=HOST:PORT: where the Services webhooks name
	// are, without a cluster. The flag is this group's only in a server
	// without AggregatorOptions; an aggregator's --service-endpoint (and
	// --services-kubeconfig) resolve webhooks too, as kube-apiserver's one
	// service resolver serves APIServices and webhooks alike.
	ServiceEndpoints []string
	// ServiceResolver reaches webhooks named by a Service. Complete sets
	// it when nil: the aggregator's resolver, or ServiceEndpoints; both
	// send default/kubernetes:443 to the server itself.
	ServiceResolver webhook.ServiceResolver

	// Set by ApplyTo.

	// Webhooks is the Source of the webhook plugins; nil when both are
	// disabled.
	Webhooks *webhook.Source
	// Policies is the Source of the ValidatingAdmissionPolicy plugin;
	// nil when it is disabled.
	Policies *policy.Source
	// MutatingPolicies is the Source of the MutatingAdmissionPolicy
	// plugin; nil when it is disabled.
	MutatingPolicies *mutatingpolicy.Source
	storage          storage.Factory
}

// NewAdmissionOptions returns the defaults: the webhook plugins enabled.
func NewAdmissionOptions() *AdmissionOptions {
	return &AdmissionOptions{Plugins: []string{mutatingpolicy.PluginName, webhook.MutatingPluginName, policy.PluginName, webhook.ValidatingPluginName}}
}

// AddFlags adds kube-apiserver's admission flags.
func (o *AdmissionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.EnablePlugins, "enable-admission-plugins", o.EnablePlugins,
		"admission plugins that should be enabled in addition to default enabled ones ("+strings.Join(o.Plugins, ", ")+"). "+
			"The order of plugins in this flag does not matter.")
	fs.StringSliceVar(&o.DisablePlugins, "disable-admission-plugins", o.DisablePlugins,
		"admission plugins that should be disabled although they are in the default enabled plugins list ("+strings.Join(o.Plugins, ", ")+"). "+
			"The order of plugins in this flag does not matter.")
	fs.StringVar(&o.ConfigFile, "admission-control-config-file", o.ConfigFile,
		"File with admission control configuration.")
}

// serviceEndpointUsage is --service-endpoint's help, the aggregator's and
// the admission webhooks'.
const serviceEndpointUsage = "NAMESPACE/NAME[:PORT]=HOST:PORT: where a Service an APIService or an admission webhook's clientConfig.service names " +
	"is reached, without a cluster (repeatable). With :PORT only that port of the Service; the backend's certificate must still be valid for NAME.NAMESPACE.svc."

// addServiceEndpointFlag adds --service-endpoint, for a server without an
// aggregator's flags.
func (o *AdmissionOptions) addServiceEndpointFlag(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.ServiceEndpoints, "service-endpoint", o.ServiceEndpoints, serviceEndpointUsage)
}

// completeServiceResolver sets ServiceResolver, when not set, from
// ServiceEndpoints, with the Service default/kubernetes (port 443) sent to
// self, the server's own URL, as kube-apiserver's loopback resolver does.
func (o *AdmissionOptions) completeServiceResolver(self string) error {
	if o.ServiceResolver != nil {
		return nil
	}
	static, err := aggregator.ParseServiceEndpoints(o.ServiceEndpoints)
	if err != nil {
		return fmt.Errorf("--service-endpoint: %w", err)
	}
	u, err := url.Parse(self)
	if err != nil {
		return fmt.Errorf("the server's own URL %q: %w", self, err)
	}
	o.ServiceResolver = aggregator.NewLoopbackResolver(static, u)
	return nil
}

// Validate checks the plugin names, as kube-apiserver does.
func (o *AdmissionOptions) Validate() []error {
	var errs []error
	if _, err := aggregator.ParseServiceEndpoints(o.ServiceEndpoints); err != nil {
		errs = append(errs, fmt.Errorf("--service-endpoint: %w", err))
	}
	for _, f := range []struct {
		flag  string
		names []string
	}{{"enable-admission-plugins", o.EnablePlugins}, {"disable-admission-plugins", o.DisablePlugins}} {
		for _, n := range f.names {
			if !slices.Contains(o.Plugins, n) {
				errs = append(errs, fmt.Errorf("%s plugin %q is unknown", f.flag, n))
			}
		}
	}
	var both []string
	for _, n := range o.EnablePlugins {
		if slices.Contains(o.DisablePlugins, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	return errs
}

// ApplyTo reads the admission configuration file, appends the policy
// and webhook plugins that are enabled to c.Admission and disables the plugins
// --disable-admission-plugins names (c.DisabledAdmissionPlugins: the
// compiled-in ones are added later, by the build function). It runs after
// the etcd options, which set the storage the configurations live in.
func (o *AdmissionOptions) ApplyTo(c *server.Config) error {
	o.storage = c.Storage
	c.DisabledAdmissionPlugins = append(c.DisabledAdmissionPlugins, o.DisablePlugins...)
	cfg, err := readAdmissionConfig(o.ConfigFile)
	if err != nil {
		return err
	}
	// The server's authorizer is read when an expression asks it: the
	// authorization options may be applied after these.
	byServer := authz.Func(func(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if c.Authorizer == nil {
			return authz.DecisionNoOpinion, "", errors.New("the server has no authorizer")
		}
		return c.Authorizer.Authorize(ctx, a)
	})
	// Namespace labels are read at each request: the build function sets
	// them when it serves namespaces.
	namespaces := system.AdmissionNamespaces(c)
	if !slices.Contains(o.DisablePlugins, mutatingpolicy.PluginName) {
		src, p, err := system.AdmissionMutatingPolicies(mutatingpolicy.Config{Authorizer: byServer, Namespaces: namespaces})
		if err != nil {
			return err
		}
		o.MutatingPolicies = src
		c.Admission = append(c.Admission, p)
	}
	if !slices.Contains(o.DisablePlugins, policy.PluginName) {
		src, vap, err := system.AdmissionPolicies(policy.Config{Authorizer: byServer, Namespaces: namespaces})
		if err != nil {
			return err
		}
		o.Policies = src
		c.Admission = append(c.Admission, vap)
	}
	mutating := !slices.Contains(o.DisablePlugins, webhook.MutatingPluginName)
	validating := !slices.Contains(o.DisablePlugins, webhook.ValidatingPluginName)
	if !mutating && !validating {
		return nil
	}
	// kube-apiserver gives each webhook plugin its own kubeconfig; the
	// credentials of a host are the same for both here, the mutating
	// plugin's file read first.
	creds := &webhook.Credentials{Users: map[string]certs.Kubeconfig{}}
	for _, name := range []string{webhook.MutatingPluginName, webhook.ValidatingPluginName} {
		if path := cfg[name]; path != "" {
			users, err := certs.ReadKubeconfigUsers(path)
			if err != nil {
				return fmt.Errorf("admission plugin %q: %w", name, err)
			}
			for n, u := range users {
				if _, ok := creds.Users[n]; !ok {
					creds.Users[n] = u
				}
			}
		}
	}
	src, plugins, err := system.AdmissionWebhooks(webhook.Config{ServiceResolver: o.ServiceResolver, Credentials: creds,
		Namespaces: namespaces})
	if err != nil {
		return err
	}
	o.Webhooks = src
	c.Admission = append(c.Admission, plugins...)
	return nil
}

// InstallSystemAPIs serves admissionregistration.k8s.io/v1 (webhook
// configurations, policies and bindings), followed by the webhook and
// policy plugins.
func (o *AdmissionOptions) InstallSystemAPIs(s *server.GenericServer) error {
	if o.Webhooks == nil && o.Policies == nil && o.MutatingPolicies == nil {
		return nil
	}
	return system.InstallAdmissionRegistration(s, o.storage, o.Webhooks, o.Policies, o.MutatingPolicies)
}

// admissionConfiguration is apiserver.config.k8s.io/v1's
// AdmissionConfiguration (and v1alpha1's, apiserver.k8s.io).
type admissionConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Plugins    []struct {
		Name          string         `json:"name"`
		Path          string         `json:"path"`
		Configuration map[string]any `json:"configuration"`
	} `json:"plugins"`
}

// webhookAdmission is the webhook plugins' configuration.
type webhookAdmission struct {
	APIVersion     string `json:"apiVersion"`
	Kind           string `json:"kind"`
	KubeConfigFile string `json:"kubeConfigFile"`
}

// readAdmissionConfig reads an AdmissionConfiguration and returns the
// kubeConfigFile of each webhook plugin configured in it.
func readAdmissionConfig(path string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading admission control config file: %w", err)
	}
	var ac admissionConfiguration
	if err := yaml.UnmarshalStrict(data, &ac); err != nil {
		return nil, fmt.Errorf("admission control config file %s: %w", path, err)
	}
	switch ac.APIVersion + "/" + ac.Kind {
	case "apiserver.config.k8s.io/v1/AdmissionConfiguration", "apiserver.k8s.io/v1alpha1/AdmissionConfiguration":
	default:
		return nil, fmt.Errorf("admission control config file %s: unsupported kind %q of apiVersion %q: want AdmissionConfiguration of apiserver.config.k8s.io/v1", path, ac.Kind, ac.APIVersion)
	}
	for _, p := range ac.Plugins {
		if p.Name != webhook.MutatingPluginName && p.Name != webhook.ValidatingPluginName {
			continue // compiled-in plugins take no configuration
		}
		var raw []byte
		switch {
		case p.Configuration != nil:
			if raw, err = yaml.Marshal(p.Configuration); err != nil {
				return nil, err
			}
		case p.Path != "":
			file := p.Path
			if !filepath.IsAbs(file) {
				file = filepath.Join(filepath.Dir(path), file)
			}
			if raw, err = os.ReadFile(file); err != nil {
				return nil, fmt.Errorf("admission plugin %q: %w", p.Name, err)
			}
		default:
			continue
		}
		var wa webhookAdmission
		if err := yaml.UnmarshalStrict(raw, &wa); err != nil {
			return nil, fmt.Errorf("admission plugin %q: %w", p.Name, err)
		}
		switch wa.APIVersion + "/" + wa.Kind {
		case "apiserver.config.k8s.io/v1/WebhookAdmissionConfiguration", "apiserver.config.k8s.io/v1alpha1/WebhookAdmission", "apiserver.config.k8s.io/v1alpha1/WebhookAdmissionConfiguration":
		default:
			return nil, fmt.Errorf("admission plugin %q: unsupported kind %q of apiVersion %q", p.Name, wa.Kind, wa.APIVersion)
		}
		if wa.KubeConfigFile == "" {
			continue
		}
		// kube-apiserver's words.
		if !filepath.IsAbs(wa.KubeConfigFile) {
			return nil, fmt.Errorf("admission plugin %q: kubeConfigFile %q must be an absolute file path", p.Name, wa.KubeConfigFile)
		}
		out[p.Name] = wa.KubeConfigFile
	}
	return out, nil
}
