// Command sampleapiserver runs k8s.io/sample-apiserver without a
// kube-apiserver, for the side-by-side load benchmark in bench/.
//
// The sample is an aggregated API server: stock, it asks a kube-apiserver to
// authenticate tokens (TokenReview), to authorize every request
// (SubjectAccessReview), and for the core API its admission plugins and API
// Priority and Fairness watch (namespaces, webhook and policy
// configurations, flow schemas and priority levels). This main builds the
// sample's server from its own packages, as the sample's main and
// pkg/cmd/server do, with three changes and nothing else:
//
//   - authentication: client certificates signed by --client-ca-file only
//     (the same CA and client certificate as apikit's wardle in the
//     benchmark); no TokenReview, no in-cluster lookup;
//   - authorization: always allow, as wardle allows any authenticated user;
//   - the core API: client-go's fake clientset, holding the usual namespaces
//     and the default (mandatory and suggested) APF objects, stands in for a
//     kube-apiserver (its discovery answers an empty OpenAPI v3 where the
//     fake's panics); the admission plugins and APF run stock against it.
//
// Everything else (etcd storage, the watch cache, APF, admission, OpenAPI,
// flags) is the sample's. Build it with a real version string:
//
//	go build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.37.2 \
//	    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" .
package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	openapiclient "k8s.io/client-go/openapi"
	"k8s.io/component-base/cli"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/sample-apiserver/pkg/admission/wardleinitializer"
	"k8s.io/sample-apiserver/pkg/apiserver"
	samplecmd "k8s.io/sample-apiserver/pkg/cmd/server"
	clientset "k8s.io/sample-apiserver/pkg/generated/clientset/versioned"
	informers "k8s.io/sample-apiserver/pkg/generated/informers/externalversions"
	sampleopenapi "k8s.io/sample-apiserver/pkg/generated/openapi"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	o := samplecmd.NewWardleServerOptions(os.Stdout, os.Stderr)
	// No kube-apiserver to ask: client certificates are the only
	// authentication, and there is no cluster to look the CA up in.
	o.RecommendedOptions.Authentication.RemoteKubeConfigFileOptional = true
	o.RecommendedOptions.Authentication.SkipInClusterLookup = true
	cmd := samplecmd.NewCommandStartWardleServer(ctx, o, false)
	// The command's own RunE builds the stock config, which needs a
	// kube-apiserver; run ours. Its flags are bound to o's
	// RecommendedOptions, which the command shares with o.
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		if err := o.Validate(args); err != nil {
			return err
		}
		return run(c.Context(), o)
	}
	os.Exit(cli.Run(cmd))
}

// run is the sample's RunWardleServer with config in place of o.Config.
func run(ctx context.Context, o *samplecmd.WardleServerOptions) error {
	cfg, err := config(o)
	if err != nil {
		return err
	}
	srv, err := cfg.Complete().New()
	if err != nil {
		return fmt.Errorf("building the server: %w", err)
	}
	srv.GenericAPIServer.AddPostStartHookOrDie("start-sample-server-informers", func(hc genericapiserver.PostStartHookContext) error {
		cfg.GenericConfig.SharedInformerFactory.Start(hc.Done())
		o.SharedInformerFactory.Start(hc.Done())
		return nil
	})
	return srv.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// coreObjects are what the fake core API holds: the namespaces every
// cluster has and the default API Priority and Fairness configuration,
// which a kube-apiserver would have written at its start.
func coreObjects() []runtime.Object {
	var objs []runtime.Object
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		objs = append(objs, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: ns},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	var levels []*flowcontrolv1.PriorityLevelConfiguration
	levels = append(levels, bootstrap.MandatoryPriorityLevelConfigurations...)
	for _, pl := range append(levels, bootstrap.SuggestedPriorityLevelConfigurations...) {
		objs = append(objs, pl.DeepCopy())
	}
	var schemas []*flowcontrolv1.FlowSchema
	schemas = append(schemas, bootstrap.MandatoryFlowSchemas...)
	for _, fs := range append(schemas, bootstrap.SuggestedFlowSchemas...) {
		objs = append(objs, fs.DeepCopy())
	}
	return objs
}

// coreClient is the fake core API. Its discovery serves no OpenAPI v3
// (client-go's fake panics), which the MutatingAdmissionPolicy plugin asks
// for at start: with no policies it has no types to convert.
type coreClient struct{ *kubefake.Clientset }

// Discovery is the fake's discovery with an empty OpenAPI v3.
func (c coreClient) Discovery() discovery.DiscoveryInterfaces {
	return noOpenAPIDiscovery{c.Clientset.Discovery()}
}

type noOpenAPIDiscovery struct{ discovery.DiscoveryInterfaces }

func (noOpenAPIDiscovery) OpenAPIV3() openapiclient.Client { return emptyOpenAPI{} }

type emptyOpenAPI struct{}

func (emptyOpenAPI) Paths() (map[string]openapiclient.GroupVersion, error) {
	return map[string]openapiclient.GroupVersion{}, nil
}

// config is the sample's WardleServerOptions.Config with the fake core API
// in place of a kube-apiserver's, and always-allow authorization.
func config(o *samplecmd.WardleServerOptions) (*apiserver.Config, error) {
	ro := o.RecommendedOptions
	if err := ro.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", o.AlternateDNS, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return nil, fmt.Errorf("error creating self-signed certificates: %w", err)
	}

	core := coreClient{kubefake.NewClientset(coreObjects()...)}
	coreInformers := kubeinformers.NewSharedInformerFactory(core, 0)
	dynamic := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())

	serverConfig := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	serverConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(sampleopenapi.GetOpenAPIDefinitions, openapi.NewDefinitionNamer(apiserver.Scheme))
	serverConfig.OpenAPIConfig.Info.Title = "Wardle"
	serverConfig.OpenAPIConfig.Info.Version = "0.1"
	serverConfig.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(sampleopenapi.GetOpenAPIDefinitions, openapi.NewDefinitionNamer(apiserver.Scheme))
	serverConfig.OpenAPIV3Config.Info.Title = "Wardle"
	serverConfig.OpenAPIV3Config.Info.Version = "0.1"
	serverConfig.FeatureGate = o.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	serverConfig.EffectiveVersion = o.ComponentGlobalsRegistry.EffectiveVersionFor(apiserver.WardleComponentName)
	// What CoreAPIOptions.ApplyTo would set from a kube-apiserver.
	serverConfig.SharedInformerFactory = coreInformers

	// RecommendedOptions.ApplyTo with the parts that need the core API
	// (CoreAPI, Features for APF, Admission) taken out and applied below
	// with the fake one; authorization nil means always allow.
	features, adm := ro.Features, ro.Admission
	ro.CoreAPI, ro.Features, ro.Admission, ro.Authorization = nil, nil, nil, nil
	ro.ExtraAdmissionInitializers = func(*genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) { return nil, nil }
	if err := ro.ApplyTo(serverConfig); err != nil {
		return nil, err
	}
	if err := features.ApplyTo(&serverConfig.Config, core, coreInformers); err != nil {
		return nil, err
	}
	// The sample's own admission initializer: BanFlunder lists Fischers
	// through the server's loopback client.
	client, err := clientset.NewForConfig(serverConfig.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback client: %w", err)
	}
	o.SharedInformerFactory = informers.NewSharedInformerFactory(client, serverConfig.LoopbackClientConfig.Timeout)
	if err := adm.ApplyTo(&serverConfig.Config, coreInformers, core, dynamic, ro.FeatureGate, serverConfig.EffectiveVersion,
		wardleinitializer.New(o.SharedInformerFactory)); err != nil {
		return nil, err
	}
	return &apiserver.Config{GenericConfig: serverConfig, ExtraConfig: apiserver.ExtraConfig{}}, nil
}
