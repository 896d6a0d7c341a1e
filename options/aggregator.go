package options

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server/aggregator"
)

// AggregatorOptions are the flags of an aggregator (server/aggregator):
// the client certificate it presents to the delegated servers behind it,
// and where their Services are. They are not part of every server's
// flags: a program that runs an aggregator sets ServerRunOptions.Aggregator
// to NewAggregatorOptions() before making its command.
type AggregatorOptions struct {
	// ProxyClientCertFile and ProxyClientKeyFile are the front-proxy
	// client certificate (--proxy-client-cert-file,
	// --proxy-client-key-file): both or neither. With neither and the
	// development PKI, Complete makes one in --cert-dir.
	ProxyClientCertFile, ProxyClientKeyFile string
	// ServiceEndpoints are --service-endpoint values,
	// NAMESPACE/NAME[:PORT]=HOST:PORT: where the Services of APIServices
	// are, without a cluster.
	ServiceEndpoints []string
	// ServicesKubeconfigFile is the kubeconfig of a cluster whose Services
	// APIServices name (--services-kubeconfig): a Service not in
	// ServiceEndpoints is resolved there, to its cluster IP or, with
	// EnableAggregatorRouting (--enable-aggregator-routing), to one of its
	// ready endpoints, as kube-apiserver does.
	ServicesKubeconfigFile  string
	EnableAggregatorRouting bool

	// Set by Complete.

	// ProxyClientCertificate is the front-proxy client certificate.
	ProxyClientCertificate *tls.Certificate
	// proxyKeyPair reloads --proxy-client-cert-file and -key-file.
	proxyKeyPair *certs.KeyPairFiles
	// FrontProxyCA signed a development front-proxy certificate; nil when
	// the certificate came from the flags. Its certificate is in
	// <cert-dir>/front-proxy-ca.crt, what backends trust with
	// --requestheader-client-ca-file.
	FrontProxyCA *certs.CA
	// ServiceResolver resolves the Services of APIServices: the
	// --service-endpoint table, then the --services-kubeconfig cluster,
	// with the Service default/kubernetes sent to the aggregator itself, as
	// kube-apiserver's loopback resolver does.
	ServiceResolver aggregator.ServiceResolver

	services certs.Kubeconfig
}

// NewAggregatorOptions returns the defaults: the development PKI's
// front-proxy certificate and no service endpoints.
func NewAggregatorOptions() *AggregatorOptions { return &AggregatorOptions{} }

// AddFlags adds the aggregator flags.
func (o *AggregatorOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ProxyClientCertFile, "proxy-client-cert-file", o.ProxyClientCertFile,
		"Client certificate used to prove the identity of the aggregator or kube-apiserver when it must call out during a request. "+
			"This includes proxying requests to a user api-server and calling out to webhook admission plugins. It is expected that this cert "+
			"includes a signature from the CA in the --requestheader-client-ca-file flag of the servers behind it. If blank (with the development "+
			"PKI), a front-proxy CA and client certificate are made in --cert-dir.")
	fs.StringVar(&o.ProxyClientKeyFile, "proxy-client-key-file", o.ProxyClientKeyFile,
		"Private key for the client certificate used to prove the identity of the aggregator or kube-apiserver when it must call out during a request.")
	fs.StringArrayVar(&o.ServiceEndpoints, "service-endpoint", o.ServiceEndpoints, serviceEndpointUsage)
	fs.StringVar(&o.ServicesKubeconfigFile, "services-kubeconfig", o.ServicesKubeconfigFile,
		"kubeconfig of the cluster whose Services APIServices name (its user must get services and list endpointslices): "+
			"a Service --service-endpoint does not list is resolved there, to its cluster IP.")
	fs.BoolVar(&o.EnableAggregatorRouting, "enable-aggregator-routing", o.EnableAggregatorRouting,
		"Turns on aggregator routing requests to endpoints IP rather than cluster IP (needs --services-kubeconfig).")
}

// Validate checks the flags.
func (o *AggregatorOptions) Validate() []error {
	var errs []error
	if (o.ProxyClientCertFile == "") != (o.ProxyClientKeyFile == "") {
		errs = append(errs, errors.New("--proxy-client-cert-file and --proxy-client-key-file must be given together"))
	}
	if o.EnableAggregatorRouting && o.ServicesKubeconfigFile == "" {
		errs = append(errs, errors.New("--enable-aggregator-routing needs --services-kubeconfig"))
	}
	if _, err := aggregator.ParseServiceEndpoints(o.ServiceEndpoints); err != nil {
		errs = append(errs, fmt.Errorf("--service-endpoint: %w", err))
	}
	return errs
}

// load reads the front-proxy certificate and the kubeconfig the flags
// name.
func (o *AggregatorOptions) load() error {
	o.ProxyClientCertificate, o.FrontProxyCA, o.proxyKeyPair = nil, nil, nil
	if o.ServicesKubeconfigFile != "" {
		k, err := certs.ReadKubeconfig(o.ServicesKubeconfigFile)
		if err == nil {
			_, err = k.ClientTLSConfig()
		}
		if err != nil {
			return fmt.Errorf("--services-kubeconfig: %w", err)
		}
		o.services = k
	}
	if o.ProxyClientCertFile == "" || o.ProxyClientKeyFile == "" {
		return nil
	}
	kp, err := certs.NewKeyPairFiles(o.ProxyClientCertFile, o.ProxyClientKeyFile)
	if err != nil {
		return fmt.Errorf("--proxy-client-cert-file/--proxy-client-key-file: %w", err)
	}
	o.ProxyClientCertificate, o.proxyKeyPair = kp.Current(), kp
	return nil
}

// complete makes the development front-proxy PKI when no certificate was
// given, and the service resolver; self is the aggregator's own URL.
func (o *AggregatorOptions) complete(devPKI bool, certDir, self string, log *slog.Logger) error {
	if o.ProxyClientCertificate == nil {
		if !devPKI {
			log.Warn("no --proxy-client-cert-file: backends will not trust the aggregator to name users")
		} else {
			ca, pair, err := certs.FrontProxy(certDir)
			if err != nil {
				return fmt.Errorf("development front-proxy PKI: %w", err)
			}
			cert, err := pair.TLSCertificate()
			if err != nil {
				return fmt.Errorf("development front-proxy PKI: %w", err)
			}
			o.ProxyClientCertificate, o.FrontProxyCA = &cert, ca
		}
	}
	static, err := aggregator.ParseServiceEndpoints(o.ServiceEndpoints)
	if err != nil {
		return fmt.Errorf("--service-endpoint: %w", err)
	}
	var resolver aggregator.ServiceResolver = static
	if o.ServicesKubeconfigFile != "" {
		lister, err := aggregator.NewServiceClient(o.services, 0)
		if err != nil {
			return fmt.Errorf("--services-kubeconfig: %w", err)
		}
		cluster := aggregator.NewClusterIPResolver(lister)
		if o.EnableAggregatorRouting {
			cluster = aggregator.NewEndpointResolver(lister)
		}
		resolver = aggregator.NewChainResolver(static, cluster)
	}
	u, err := url.Parse(self)
	if err != nil {
		return fmt.Errorf("the aggregator's own URL %q: %w", self, err)
	}
	o.ServiceResolver = aggregator.NewLoopbackResolver(resolver, u)
	return nil
}

// Config is the aggregator.Config the flags make (after Complete).
func (o *AggregatorOptions) Config() aggregator.Config {
	c := aggregator.Config{ServiceResolver: o.ServiceResolver}
	if o.proxyKeyPair != nil {
		// A rotated --proxy-client-cert-file is presented from the next
		// connection to a backend.
		c.ProxyClientCertificate = o.proxyKeyPair.GetClientCertificate
	} else if cert := o.ProxyClientCertificate; cert != nil {
		c.ProxyClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return c
}
