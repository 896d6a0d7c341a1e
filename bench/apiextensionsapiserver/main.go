// Command apiextensionsapiserver runs k8s.io/apiextensions-apiserver
// standalone, without a kube-apiserver, for the side-by-side CRD load
// benchmark in bench/ (`go run . -crd`).
//
// Stock, the apiextensions-apiserver is the first link of kube-apiserver's
// chain and, run alone, asks a kube-apiserver to authenticate tokens
// (TokenReview), to authorize every request (SubjectAccessReview), and for
// the core API its admission plugins, API Priority and Fairness and the
// conversion webhooks' service resolver watch. This main builds the server
// from the module's own packages, as its main and pkg/cmd/server do, with
// the same three changes as bench/sampleapiserver and nothing else:
//
//   - authentication: client certificates signed by --client-ca-file only
//     (the same CA and client certificate as apikit's side in the
//     benchmark); no TokenReview, no in-cluster lookup;
//   - authorization: always allow, as apikit's side allows any
//     authenticated user;
//   - the core API: client-go's fake clientset, holding the usual namespaces
//     and the default (mandatory and suggested) APF objects, stands in for a
//     kube-apiserver (its discovery answers an empty OpenAPI v3 where the
//     fake's panics); the admission plugins and APF run stock against it.
//
// Everything else (etcd storage, the watch cache, the CRD controllers,
// validation, defaulting, CEL, APF, admission, OpenAPI, flags) is the
// module's. Build it with a real version string:
//
//	go build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v1.37.2 \
//	    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" .
package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"

	"github.com/spf13/cobra"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	openapiclient "k8s.io/client-go/openapi"
	"k8s.io/component-base/cli"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	o := options.NewCustomResourceDefinitionsServerOptions(os.Stdout, os.Stderr)
	// No kube-apiserver to ask: client certificates are the only
	// authentication, and there is no cluster to look the CA up in.
	o.RecommendedOptions.Authentication.RemoteKubeConfigFileOptional = true
	o.RecommendedOptions.Authentication.SkipInClusterLookup = true
	// The command is server.NewServerCommand's, which keeps its options to
	// itself; the flags and steps are the same.
	cmd := &cobra.Command{
		Short: "Launch an API extensions API server (standalone, for bench/)",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return o.ServerRunOptions.ComponentGlobalsRegistry.Set()
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return run(c.Context(), o)
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	os.Exit(cli.Run(cmd))
}

// run is the module's server.Run with config in place of o.Config.
func run(ctx context.Context, o *options.CustomResourceDefinitionsServerOptions) error {
	cfg, err := config(o)
	if err != nil {
		return err
	}
	srv, err := cfg.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return fmt.Errorf("building the server: %w", err)
	}
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

// serviceResolver is the module's (unexported) one: conversion webhooks'
// services looked up in the core API.
type serviceResolver struct{ services corelisters.ServiceLister }

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveCluster(r.services, namespace, name, port)
}

// config is the module's CustomResourceDefinitionsServerOptions.Config with
// the fake core API in place of a kube-apiserver's, and always-allow
// authorization.
func config(o *options.CustomResourceDefinitionsServerOptions) (*apiserver.Config, error) {
	ro := o.RecommendedOptions
	if err := ro.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return nil, fmt.Errorf("error creating self-signed certificates: %w", err)
	}

	core := coreClient{kubefake.NewClientset(coreObjects()...)}
	coreInformers := kubeinformers.NewSharedInformerFactory(core, 0)
	dynamic := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())

	serverConfig := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	if err := o.ServerRunOptions.ApplyTo(&serverConfig.Config); err != nil {
		return nil, err
	}
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
	if err := adm.ApplyTo(&serverConfig.Config, coreInformers, core, dynamic, ro.FeatureGate, serverConfig.EffectiveVersion); err != nil {
		return nil, err
	}
	if err := o.APIEnablement.ApplyTo(&serverConfig.Config, apiserver.DefaultAPIResourceConfigSource(), apiserver.Scheme); err != nil {
		return nil, err
	}

	serverConfig.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions), openapinamer.NewDefinitionNamer(apiserver.Scheme, scheme.Scheme))
	return &apiserver.Config{
		GenericConfig: serverConfig,
		ExtraConfig: apiserver.ExtraConfig{
			CRDRESTOptionsGetter: options.NewCRDRESTOptionsGetter(*ro.Etcd, serverConfig.ResourceTransformers, serverConfig.StorageObjectCountTracker),
			ServiceResolver:      serviceResolver{coreInformers.Core().V1().Services().Lister()},
			AuthResolverWrapper:  webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, serverConfig.LoopbackClientConfig, noopoteltrace.NewTracerProvider()),
		},
	}, nil
}
