package options

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/server"
)

// Flag sections, in --help order.
const (
	SectionSecureServing  = "secure serving"
	SectionGeneric        = "generic"
	SectionEtcd           = "etcd"
	SectionAuthentication = "authentication"
	SectionServiceAccount = "service account"
	SectionAuthorization  = "authorization"
	SectionAudit          = "audit"
	SectionFlowControl    = "flow control"
	SectionAPIEnablement  = "API enablement"
	SectionAggregator     = "aggregator"
	SectionMisc           = "misc"
	SectionLogs           = "logs"
	SectionTraces         = "traces"
)

// ServerRunOptions are all the flags of an apikit server, by group.
type ServerRunOptions struct {
	SecureServing  *SecureServingOptions
	Generic        *GenericOptions
	Etcd           *EtcdOptions
	Authentication *AuthenticationOptions
	ServiceAccount *ServiceAccountOptions
	Authorization  *AuthorizationOptions
	Audit          *AuditOptions
	FlowControl    *FlowControlOptions
	Admission      *AdmissionOptions
	APIEnablement  *APIEnablementOptions
	ServiceIPRange *ServiceIPRangeOptions
	Logs           *LogsOptions
	Tracing        *TracingOptions
	// Aggregator, nil by default, adds the flags of an aggregator
	// (server/aggregator): set it to NewAggregatorOptions() in a program
	// that runs one.
	Aggregator *AggregatorOptions

	// Logger receives what Complete has to say (defaults it chose,
	// warnings); nil means slog.Default(). Not a flag.
	Logger *slog.Logger
	// Metrics is the registry the servers ApplyTo configures count into
	// (server.Config.Metrics), the storage's requests among them;
	// Complete makes one when nil. Not a flag.
	Metrics *metrics.Registry
}

// NewServerRunOptions returns the defaults: kube-apiserver's, with the
// embedded etcd, 127.0.0.1:8443 and the development PKI. The data
// directory is left to the program (NewServerCommand makes it ./.<name>).
func NewServerRunOptions() *ServerRunOptions {
	return &ServerRunOptions{
		SecureServing:  NewSecureServingOptions(),
		Generic:        NewGenericOptions(),
		Etcd:           NewEtcdOptions(),
		Authentication: NewAuthenticationOptions(),
		ServiceAccount: NewServiceAccountOptions(),
		Authorization:  NewAuthorizationOptions(),
		Audit:          NewAuditOptions(),
		FlowControl:    NewFlowControlOptions(),
		Admission:      NewAdmissionOptions(),
		APIEnablement:  NewAPIEnablementOptions(),
		ServiceIPRange: NewServiceIPRangeOptions(),
		Logs:           NewLogsOptions(),
		Tracing:        NewTracingOptions(),
	}
}

// Flags returns the flags bound to o, by section.
func (o *ServerRunOptions) Flags() NamedFlagSets {
	var fss NamedFlagSets
	o.SecureServing.AddFlags(fss.FlagSet(SectionSecureServing))
	o.Generic.AddFlags(fss.FlagSet(SectionGeneric))
	o.Etcd.AddFlags(fss.FlagSet(SectionEtcd))
	o.Authentication.AddFlags(fss.FlagSet(SectionAuthentication))
	o.ServiceAccount.AddFlags(fss.FlagSet(SectionServiceAccount))
	o.Authorization.AddFlags(fss.FlagSet(SectionAuthorization))
	o.Audit.AddFlags(fss.FlagSet(SectionAudit))
	o.FlowControl.AddFlags(fss.FlagSet(SectionFlowControl))
	o.Admission.AddFlags(fss.FlagSet(SectionAdmission))
	if o.Aggregator == nil {
		// An aggregator's --service-endpoint resolves webhooks too.
		o.Admission.addServiceEndpointFlag(fss.FlagSet(SectionAdmission))
	}
	o.APIEnablement.AddFlags(fss.FlagSet(SectionAPIEnablement))
	if o.Aggregator != nil {
		o.Aggregator.AddFlags(fss.FlagSet(SectionAggregator))
	}
	o.ServiceIPRange.AddFlags(fss.FlagSet(SectionMisc))
	o.Logs.AddFlags(fss.FlagSet(SectionLogs))
	o.Tracing.AddFlags(fss.FlagSet(SectionTraces))
	return fss
}

func (o *ServerRunOptions) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// Validate checks every flag that can be checked without reading files,
// and returns every problem.
func (o *ServerRunOptions) Validate() []error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Generic.Validate()...)
	errs = append(errs, o.Etcd.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.ServiceAccount.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.Audit.Validate()...)
	errs = append(errs, o.FlowControl.Validate()...)
	errs = append(errs, o.FlowControl.ValidateInFlight(o.Generic)...)
	errs = append(errs, o.Admission.Validate()...)
	errs = append(errs, o.APIEnablement.Validate()...)
	errs = append(errs, o.ServiceIPRange.Validate()...)
	errs = append(errs, o.Logs.Validate()...)
	if o.Aggregator != nil {
		errs = append(errs, o.Aggregator.Validate()...)
	}
	return errs
}

// CompletedOptions are options Complete has checked and filled. Only they
// can be applied to a server.Config.
type CompletedOptions struct {
	*completedOptions
}

type completedOptions struct {
	o *ServerRunOptions
}

// Complete checks the options and fills in what they imply, as
// kube-apiserver's Complete does. It runs Validate and reads the files the
// flags name (certificates, CA bundles, keys, the authorization webhook's
// kubeconfig) and returns every problem at
// once, as Errors; only when there is none does it write anything:
//
//   - the advertise address, from the bind address (see
//     GenericOptions.DefaultAdvertiseAddress), and the external host, from
//     the advertise address or the machine's host name;
//   - the service IP ranges and the API server's service IP;
//   - the serving certificate: --tls-cert-file, or a self-signed one in
//     --cert-dir (default <data-dir>/pki) for the advertise address, the
//     service IP, localhost, the alternate names and --tls-san, reused on
//     restart;
//   - the development PKI, when --dev-pki is on and neither
//     --tls-cert-file nor --client-ca-file is given: the serving
//     certificate's CA verifies client certificates, and an admin client
//     certificate and a kubeconfig for it are written to
//     <data-dir>/kubeconfig;
//   - the development PKI's service-account signing key
//     (<cert-dir>/sa.key, made once and reused), when no key is given;
//   - the service-account token Generator and the expiration warnings;
//   - the authenticator (see AuthenticationOptions; a delegated server
//     reads its front server's extension-apiserver-authentication
//     ConfigMap here) and the audit log;
//   - with Aggregator set, the front-proxy client certificate (the
//     development PKI's in <cert-dir>/front-proxy-*, unless given) and the
//     service resolver, which resolves the Services of admission webhooks
//     too (without Aggregator, Admission.ServiceEndpoints does);
//   - the watch cache sizes, defaults merged with the flag's entries;
//   - the normalised --runtime-config and the flow-control queue wait
//     limit;
//   - the storage, not opened yet.
//
// With --secure-port=0 it opens the listener, to learn the port.
func (o *ServerRunOptions) Complete() (CompletedOptions, error) {
	log := o.logger()
	errs := o.Validate()
	errs = append(errs, o.Authentication.load()...)
	errs = append(errs, o.ServiceAccount.loadKeys()...)
	if err := o.SecureServing.loadCertificate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Authorization.loadWebhookConfig(); err != nil {
		errs = append(errs, err)
	}
	if o.Aggregator != nil {
		if err := o.Aggregator.load(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return CompletedOptions{}, Errors(errs)
	}

	if err := o.Generic.DefaultAdvertiseAddress(o.SecureServing.BindAddress, log); err != nil {
		return CompletedOptions{}, err
	}
	if err := o.Generic.DefaultExternalHost(log); err != nil {
		return CompletedOptions{}, err
	}
	if err := o.ServiceIPRange.Complete(log); err != nil {
		return CompletedOptions{}, err
	}
	o.Authentication.ApplyAuthorization(o.Authorization, log)
	if err := o.Etcd.CompleteWatchCache(); err != nil {
		return CompletedOptions{}, err
	}
	if err := o.Etcd.CompleteEncryption(); err != nil {
		return CompletedOptions{}, err
	}
	o.APIEnablement.Complete()
	o.FlowControl.Complete(o.Generic)

	if o.Etcd.DataDir != "" {
		abs, err := filepath.Abs(o.Etcd.DataDir)
		if err != nil {
			return CompletedOptions{}, fmt.Errorf("--data-dir: %w", err)
		}
		o.Etcd.DataDir = abs
	}
	if o.SecureServing.CertDirectory == "" && o.Etcd.DataDir != "" {
		o.SecureServing.CertDirectory = filepath.Join(o.Etcd.DataDir, "pki")
	}
	ss := o.SecureServing
	hosts := certHosts(o.Generic.AdvertiseAddress, o.ServiceIPRange.APIServerServiceIP, ss.BindAddress,
		o.Generic.ExternalHost, ss.AlternateDNS, ss.AlternateIPs, ss.SANs)
	if err := ss.MaybeDefaultWithSelfSignedCerts(hosts); err != nil {
		return CompletedOptions{}, err
	}
	if err := ss.listen(); err != nil {
		return CompletedOptions{}, err
	}
	if err := o.completeAuthentication(log); err != nil {
		if ss.Listener != nil {
			ss.Listener.Close()
		}
		return CompletedOptions{}, err
	}
	if o.Aggregator != nil {
		if err := o.Aggregator.complete(ss.DevPKI, ss.CertDirectory, ss.localURL(), log); err != nil {
			if ss.Listener != nil {
				ss.Listener.Close()
			}
			return CompletedOptions{}, err
		}
	}
	if o.Aggregator != nil && o.Admission.ServiceResolver == nil {
		// One resolver for APIServices and webhooks, as kube-apiserver's.
		o.Admission.ServiceResolver = o.Aggregator.ServiceResolver
	}
	if err := o.Admission.completeServiceResolver(ss.localURL()); err != nil {
		if ss.Listener != nil {
			ss.Listener.Close()
		}
		return CompletedOptions{}, err
	}
	if err := o.Tracing.Complete(log); err != nil {
		if ss.Listener != nil {
			ss.Listener.Close()
		}
		return CompletedOptions{}, err
	}
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	o.Etcd.Storage = newStorage(o.Etcd, o.Metrics, log)
	return CompletedOptions{&completedOptions{o}}, nil
}

// completeAuthentication makes the development PKI (and its
// service-account signing key), the token Generator, the authenticator
// and the audit log.
func (o *ServerRunOptions) completeAuthentication(log *slog.Logger) error {
	if err := o.completeDevPKI(log); err != nil {
		return err
	}
	if err := o.ServiceAccount.Complete(log); err != nil {
		return err
	}
	if err := o.Authentication.complete(o.ServiceAccount, log); err != nil {
		return err
	}
	log.Debug("authentication", "methods", o.Authentication.describe(o.ServiceAccount))
	return o.Audit.Complete()
}

// completeDevPKI makes the development PKI when it is on and no real
// certificates were given.
func (o *ServerRunOptions) completeDevPKI(log *slog.Logger) error {
	ss, auth := o.SecureServing, o.Authentication
	ss.AdminKubeconfig = ""
	switch {
	case !ss.DevPKI || auth.ClientCAFile != "":
		return nil
	case ss.CertFile != "":
		log.Info("--tls-cert-file without --client-ca-file: no development PKI, and client certificates are not accepted")
		return nil
	}
	pool, err := certs.PoolFromPEM(ss.CA.CertPEM)
	if err != nil {
		return fmt.Errorf("development PKI: %w", err)
	}
	auth.ClientCA = authn.StaticCAs{Pool: pool}
	if err := o.ServiceAccount.defaultDevSigningKey(ss.CertDirectory, log); err != nil {
		return fmt.Errorf("development PKI: %w", err)
	}
	path := devKubeconfigPath(o.Etcd.DataDir, ss.CertDirectory)
	if path == "" {
		log.Warn("development PKI without --data-dir or --cert-dir: no admin kubeconfig written")
		return nil
	}
	if _, err := certs.WriteAdminKubeconfig(path, ss.CertDirectory, ss.CA, ss.localURL()); err != nil {
		return fmt.Errorf("development PKI: %w", err)
	}
	ss.AdminKubeconfig = path
	return nil
}

// ApplyTo sets c from the options, group by group.
func (c CompletedOptions) ApplyTo(cfg *server.Config) error {
	if c.completedOptions == nil {
		return errors.New("options: ApplyTo on a zero CompletedOptions; use Complete")
	}
	o := c.o
	if cfg.Metrics == nil {
		// Before the groups: the storage counts into it already, and
		// the audit options add to it.
		cfg.Metrics = o.Metrics
	}
	for _, apply := range []func(*server.Config) error{
		o.Generic.ApplyTo,
		o.SecureServing.ApplyTo, // after Generic: adds the port to the external address
		o.Etcd.ApplyTo,
		o.Authentication.ApplyTo, // after SecureServing: sets its client CA
		o.Authorization.ApplyTo,
		o.Audit.ApplyTo,
		o.FlowControl.ApplyTo,
		o.Admission.ApplyTo, // after Etcd: its configurations' storage
		o.APIEnablement.ApplyTo,
		o.ServiceIPRange.ApplyTo,
		o.Tracing.ApplyTo,
	} {
		if err := apply(cfg); err != nil {
			return err
		}
	}
	cfg.ServiceAccountTokens = o.ServiceAccount.tokens(o.Authentication.APIAudiences)
	if cfg.Logger == nil {
		cfg.Logger = o.logger()
	}
	return nil
}

// systemInstaller is implemented by option groups that serve APIs of their
// own (RBAC, the authentication and authorization reviews, flow control):
// they install them, with the hooks that keep them running, into the
// outermost server only, so a chain serves each once.
type systemInstaller interface {
	InstallSystemAPIs(s *server.GenericServer) error
}

// InstallSystemAPIs installs the API groups and hooks the flags turned on
// into s, which must be the outermost server of the chain. NewServerCommand
// calls it on the server the build function returns; programs that build
// servers without the command call it themselves.
func (c CompletedOptions) InstallSystemAPIs(s *server.GenericServer) error {
	o := c.o
	for _, g := range []any{o.Authentication, o.ServiceAccount, o.Authorization, o.Audit, o.FlowControl, o.Admission, o.Tracing} {
		if si, ok := g.(systemInstaller); ok {
			if err := si.InstallSystemAPIs(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// Options returns the options Complete filled, for reading what it derived
// (the storage, the token generator, the admin kubeconfig...).
func (c CompletedOptions) Options() *ServerRunOptions { return c.o }
