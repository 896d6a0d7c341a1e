package options

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/admission/mutatingpolicy"
	"github.com/apikit-dev/apikit/admission/policy"
	"github.com/apikit-dev/apikit/admission/webhook"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func TestAdmissionOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name            string
		enable, disable []string
		want            []string
	}{
		{name: "known names", enable: []string{"MutatingAdmissionWebhook"}, disable: []string{"BanFlunder"}},
		{name: "unknown", enable: []string{"NamespaceLifecycle"}, disable: []string{"Nope"},
			want: []string{`enable-admission-plugins plugin "NamespaceLifecycle" is unknown`, `disable-admission-plugins plugin "Nope" is unknown`}},
		{name: "both", enable: []string{"BanFlunder"}, disable: []string{"BanFlunder"},
			want: []string{`[BanFlunder] in enable-admission-plugins and disable-admission-plugins overlapped`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewAdmissionOptions()
			o.Plugins = append(o.Plugins, "BanFlunder")
			o.EnablePlugins, o.DisablePlugins = tc.enable, tc.disable
			var got []string
			for _, err := range o.Validate() {
				got = append(got, err.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAdmissionConfigFile(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "webhooks.kubeconfig")
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("webhooks.kubeconfig", "apiVersion: v1\nkind: Config\nusers:\n- name: '*.webhooks.svc'\n  user:\n    token: secret\n")
	write("mutating.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: WebhookAdmissionConfiguration\nkubeConfigFile: "+kubeconfig+"\n")
	cfgFile := write("admission.yaml", `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: `+kubeconfig+`
- name: MutatingAdmissionWebhook
  path: mutating.yaml
- name: BanFlunder
`)
	got, err := readAdmissionConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if got[webhook.MutatingPluginName] != kubeconfig || got[webhook.ValidatingPluginName] != kubeconfig {
		t.Errorf("kubeconfigs %v", got)
	}
	o := NewAdmissionOptions()
	o.ConfigFile = cfgFile
	c := &server.Config{Storage: storage.Shared(memory.New())}
	if err := o.ApplyTo(c); err != nil {
		t.Fatal(err)
	}
	if len(c.Admission) != 4 || o.Webhooks == nil || o.Policies == nil || o.MutatingPolicies == nil ||
		admission.NameOf(c.Admission[0]) != mutatingpolicy.PluginName || admission.NameOf(c.Admission[1]) != policy.PluginName {
		t.Errorf("plugins %v, sources %v %v %v", c.Admission, o.Webhooks, o.Policies, o.MutatingPolicies)
	}

	relative := write("relative.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: webhooks.kubeconfig\n")
	if _, err := readAdmissionConfig(relative); err == nil || !strings.Contains(err.Error(), `kubeConfigFile "webhooks.kubeconfig" must be an absolute file path`) {
		t.Errorf("relative kubeConfigFile: %v", err)
	}
	wrongKind := write("kind.yaml", "apiVersion: v1\nkind: ConfigMap\n")
	if _, err := readAdmissionConfig(wrongKind); err == nil || !strings.Contains(err.Error(), `unsupported kind "ConfigMap"`) {
		t.Errorf("wrong kind: %v", err)
	}
}

// TestDisableAdmissionPlugins: disabled webhook plugins are not added; a
// disabled compiled-in plugin is left out by the server.
func TestDisableAdmissionPlugins(t *testing.T) {
	o := NewAdmissionOptions()
	o.DisablePlugins = []string{webhook.MutatingPluginName, webhook.ValidatingPluginName, policy.PluginName, mutatingpolicy.PluginName, "BanFlunder"}
	c := &server.Config{Storage: storage.Shared(memory.New())}
	if err := o.ApplyTo(c); err != nil {
		t.Fatal(err)
	}
	if len(c.Admission) != 0 || o.Webhooks != nil || o.Policies != nil || o.MutatingPolicies != nil {
		t.Errorf("plugins %v with the webhook and policy plugins disabled", c.Admission)
	}
	only := NewAdmissionOptions()
	only.DisablePlugins = []string{webhook.MutatingPluginName, webhook.ValidatingPluginName, mutatingpolicy.PluginName}
	oc := &server.Config{Storage: storage.Shared(memory.New())}
	if err := only.ApplyTo(oc); err != nil {
		t.Fatal(err)
	}
	if len(oc.Admission) != 1 || admission.NameOf(oc.Admission[0]) != policy.PluginName || only.Policies == nil {
		t.Errorf("plugins %v with only the webhook plugins disabled", oc.Admission)
	}
	chain := admission.Chain{named("BanFlunder"), named("Other")}.Without(c.DisabledAdmissionPlugins...)
	if len(chain) != 1 || admission.NameOf(chain[0]) != "Other" {
		t.Errorf("chain after disabling: %v", chain)
	}
}

type named string

func (n named) Name() string                   { return string(n) }
func (named) Handles(admission.Operation) bool { return true }

// TestWebhookServiceResolver: the Services admission webhooks name are
// resolved by --service-endpoint in a server without an aggregator, by
// the aggregator's resolver in one with it, and default/kubernetes is the
// server itself in both.
func TestWebhookServiceResolver(t *testing.T) {
	resolve := func(t *testing.T, o *ServerRunOptions) {
		t.Helper()
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.SecureServing.Listener.Close() })
		r := o.Admission.ServiceResolver
		if r == nil {
			t.Fatal("no service resolver for the webhooks")
		}
		if u, err := r.ResolveEndpoint("hooks", "svc", 443); err != nil || u.String() != "https://127.0.0.1:9443" {
			t.Errorf("hooks/svc: %v %v", u, err)
		}
		if u, err := r.ResolveEndpoint("default", "kubernetes", 443); err != nil || u.String() != o.SecureServing.localURL() {
			t.Errorf("default/kubernetes: %v %v, want the server itself", u, err)
		}
		if _, err := r.ResolveEndpoint("hooks", "other", 443); err == nil {
			t.Error("a Service not in the table resolved")
		}
	}
	t.Run("without an aggregator", func(t *testing.T) {
		o, _ := newTestOptions(t, "--storage-backend=memory", "--secure-port=0", "--service-endpoint=hooks/svc=127.0.0.1:9443")
		resolve(t, o)
	})
	t.Run("the aggregator's", func(t *testing.T) {
		resolve(t, newAggregatorOptions(t, "--storage-backend=memory", "--secure-port=0", "--service-endpoint=hooks/svc=127.0.0.1:9443"))
	})
	t.Run("invalid", func(t *testing.T) {
		o, _ := newTestOptions(t, "--storage-backend=memory", "--service-endpoint=hooks/svc")
		_, err := o.Complete()
		if got := joinLines(errorStrings(err)); !strings.Contains(got, `--service-endpoint: service endpoint "hooks/svc": want NAMESPACE/NAME=HOST:PORT`) {
			t.Errorf("Complete: %s", got)
		}
	})
}
