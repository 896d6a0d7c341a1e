package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/audit"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/authz"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/flowcontrol"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/request"
	"github.com/apikit-dev/apikit/server/endpoints"
	"github.com/apikit-dev/apikit/storage"
)

// Config is everything a GenericServer is made of. NewConfig fills defaults;
// callers (usually the options package) set the rest, then Complete.
type Config struct {
	// SecureServing says where and how to listen. Only the outermost server
	// of a chain listens.
	SecureServing SecureServing
	// ExternalAddress is host[:port] clients use to reach the server; it is
	// put in the self-signed certificate.
	ExternalAddress string

	// Storage hands out each resource's storage. Servers do not use it
	// themselves: it is where code building stores gets storage from, so
	// that flags (backend, prefix, watch cache sizes) apply everywhere.
	Storage storage.Factory

	// APIEnabled, when set, decides whether InstallAPIGroup serves a
	// group-version (--runtime-config); nil serves every version. A group
	// whose versions are all disabled is not installed at all.
	APIEnabled func(gv meta.GroupVersion) bool

	// Authenticator identifies callers. The default accepts client
	// certificates signed by SecureServing.ClientCA and nothing else.
	Authenticator authn.Authenticator
	// ServiceAccountTokens, when set, issue service-account tokens (the
	// core group's TokenRequest) and say who checks them; options set it
	// from the --service-account-* flags.
	ServiceAccountTokens *serviceaccount.Tokens
	// EventTTL is how long a served events resource keeps an event after
	// its last activity (--event-ttl); 0 is the resource's default.
	EventTTL time.Duration
	// Authorizer decides what they may do. The default allows every
	// authenticated user everything.
	Authorizer authz.Authorizer
	// Audit, when set, receives an audit Event for every authenticated
	// request (--audit-log-path); nil turns auditing off.
	Audit audit.Sink
	// AuditPolicy gives each request its audit level (--audit-policy-file);
	// nil records every request at the Metadata level.
	AuditPolicy audit.PolicyChecker
	// PublicPaths may be requested without credentials (as
	// system:anonymous); the authorizer still decides. The default is the
	// health endpoints, so that probes work.
	PublicPaths []string
	// FlowControl is the policy that queues, limits or rejects requests
	// (429) after authentication and before authorization. When nil,
	// Complete makes one from the fields below: flowcontrol.APF with
	// kube-apiserver's default configuration, or flowcontrol.MaxInFlight
	// without priority and fairness (none when both limits are 0). The
	// options package sets an APF kept in step with the
	// flowcontrol.apiserver.k8s.io objects.
	FlowControl flowcontrol.Interface
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the
	// requests served at once (--max-requests-inflight and
	// --max-mutating-requests-inflight; kube-apiserver's 400 and 200). With
	// EnablePriorityAndFairness their sum is the server's total concurrency;
	// without, each bounds its kind of request and 0 means no bound. They
	// are what a FlowControl filter is built from.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// EnablePriorityAndFairness selects API Priority and Fairness over the
	// plain max-in-flight limits (--enable-priority-and-fairness).
	EnablePriorityAndFairness bool
	// RequestWaitLimit bounds how long a request may wait in a flow-control
	// queue: a quarter of RequestTimeout, as kube-apiserver has it.
	RequestWaitLimit time.Duration
	// Admission runs on every write where kube-apiserver runs it: mutating
	// plugins after the strategy's defaults (registry.Defaulter) and before
	// PrepareForCreate/Update, validating ones after validation and before
	// storage.
	Admission admission.Chain
	// DisabledAdmissionPlugins names plugins of Admission that do not run
	// (--disable-admission-plugins; admission.Named gives the names).
	DisabledAdmissionPlugins []string
	// AdmissionNamespaces gives the admission plugins that match writes by
	// their namespace's labels (the namespaceSelectors of webhooks and
	// ValidatingAdmissionPolicies) those labels. A server that serves
	// namespaces sets it before Complete (core.API.NamespaceLister, as
	// wardle --core-api does); the plugins read it at each request, so it
	// may be set after they were made. nil: every namespace is unlabelled.
	AdmissionNamespaces admission.NamespaceLabels

	// RequestTimeout bounds requests that are not long-running.
	RequestTimeout time.Duration
	// MinRequestTimeout is the base of a watch's lifetime when the client
	// gives none: a random duration between it and twice it.
	MinRequestTimeout time.Duration

	// GarbageCollection says a garbage collector removes the dependents
	// of deleted objects (kube-apiserver's --enable-garbage-collector): a
	// delete's propagationPolicy Orphan then sets the orphan finalizer and
	// Foreground the foregroundDeletion finalizer, which the collector
	// removes. Off, the policy is ignored and objects go at once, since
	// nothing would remove those finalizers.
	GarbageCollection bool
	// MaxRequestBodyBytes bounds request bodies (413 beyond).
	MaxRequestBodyBytes int64
	// MaxObjectBytes bounds the object a PATCH of any type produces,
	// checked on its JSON before it is decoded (413 beyond); zero means
	// storage.DefaultMaxObjectBytes, what every storage backend stores by
	// default. --storage-max-object-bytes sets it and the backends' limit
	// alike, so that one limit bounds objects however they are written.
	MaxObjectBytes int64
	// LongRunning reports requests exempt from RequestTimeout.
	LongRunning func(*request.Info) bool
	// RequestInfoResolver parses request paths.
	RequestInfoResolver *request.Resolver

	// ShutdownDelayDuration keeps serving after shutdown starts, with
	// /readyz failing, so load balancers stop sending traffic first.
	ShutdownDelayDuration time.Duration
	// ShutdownTimeout bounds the wait for in-flight requests to finish.
	ShutdownTimeout time.Duration

	// EnableProfiling serves Go's pprof handlers under /debug/pprof/, for
	// those the authorizer lets in (under RBAC: non-resource URL rules, so
	// cluster-admin), as kube-apiserver's --profiling does.
	EnableProfiling bool

	// Metrics is the server's Prometheus registry, served at /metrics (to
	// those the authorizer lets get that non-resource URL) and fed by the
	// handler chain's metrics filter. Complete makes a new one when nil:
	// servers built from different configs never share a series.
	Metrics *metrics.Registry

	// Version is served at /version.
	Version VersionInfo
	// HealthChecks run on /healthz, /livez and /readyz; ReadyzChecks only on
	// /readyz (storage, for instance), LivezChecks only on /livez.
	HealthChecks, LivezChecks, ReadyzChecks []HealthCheck

	// OpenAPITitle and OpenAPIVersion head the OpenAPI documents.
	OpenAPITitle, OpenAPIVersion string

	// BuildHandlerChain wraps the API handler in filters; the default is
	// DefaultBuildHandlerChain.
	BuildHandlerChain func(apiHandler http.Handler, c *CompletedConfig) http.Handler

	// Logger logs server events; the default is slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, traces requests: the handler chain opens
	// each request's span with it, and storage, webhooks and the proxy open
	// theirs below (see package tracing). nil traces nothing and costs
	// nothing.
	TracerProvider trace.TracerProvider
}

// SecureServing configures the HTTPS listener.
type SecureServing struct {
	// Listener, when set, is served as is.
	Listener net.Listener
	// BindAddress and Port are listened on when Listener is nil. Port 0
	// picks a free port.
	BindAddress string
	Port        int
	// Certificate is the serving certificate. When it is nil, Complete
	// makes a self-signed one (kept in CertDir when that is set).
	Certificate *tls.Certificate
	// GetCertificate, when set, gives each handshake its certificate
	// (certs.KeyPairFiles reloads rotated files), in place of Certificate,
	// which then only describes the certificate the server started with.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// CertDir holds generated serving certificates across restarts.
	CertDir string
	// CABundle is the PEM of the CA clients verify Certificate with, when
	// it is known (a self-signed certificate's); the core group publishes
	// it in each namespace's kube-root-ca.crt ConfigMap.
	CABundle []byte
	// AlternateDNS and AlternateIPs are added to a generated certificate.
	AlternateDNS []string
	AlternateIPs []net.IP
	// ClientCA verifies client certificates for the default authenticator.
	ClientCA authn.CAProvider
	// MinTLSVersion defaults to TLS 1.2.
	MinTLSVersion uint16
	// CipherSuites restricts TLS 1.2 suites; nil is Go's secure default.
	CipherSuites []uint16
	// HTTP2MaxStreamsPerConnection bounds concurrent streams per client
	// connection (kube-apiserver's default is 1000).
	HTTP2MaxStreamsPerConnection uint32
}

// HealthCheck is a named check of /healthz, /livez or /readyz.
type HealthCheck struct {
	Name  string
	Check func(r *http.Request) error
}

// NewConfig returns a Config with kube-apiserver's defaults.
func NewConfig() *Config {
	return &Config{
		SecureServing: SecureServing{
			BindAddress:                  "127.0.0.1",
			Port:                         8443,
			MinTLSVersion:                tls.VersionTLS12,
			HTTP2MaxStreamsPerConnection: 1000,
		},
		PublicPaths:                 []string{"/healthz", "/livez", "/readyz"},
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		EnablePriorityAndFairness:   true,
		RequestWaitLimit:            15 * time.Second,
		RequestTimeout:              60 * time.Second,
		MinRequestTimeout:           30 * time.Minute,
		MaxRequestBodyBytes:         endpoints.DefaultMaxRequestBodyBytes,
		LongRunning:                 func(i *request.Info) bool { return i.IsLongRunning() },
		RequestInfoResolver:         request.DefaultResolver,
		ShutdownTimeout:             60 * time.Second,
		Version:                     DefaultVersion(),
		OpenAPITitle:                "apikit",
		OpenAPIVersion:              "v0.1.0",
	}
}

// CompletedConfig is a Config whose derived fields are filled. Only a
// CompletedConfig can build a server.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	*Config
}

// Complete fills what can be derived: the self-signed serving certificate,
// the default authenticator and authorizer, the logger.
func (c *Config) Complete() (CompletedConfig, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.BuildHandlerChain == nil {
		c.BuildHandlerChain = DefaultBuildHandlerChain
	}
	if c.LongRunning == nil {
		c.LongRunning = func(i *request.Info) bool { return i.IsLongRunning() }
	}
	if c.Metrics == nil {
		c.Metrics = metrics.New()
	}
	if c.RequestInfoResolver == nil {
		c.RequestInfoResolver = request.DefaultResolver
	}
	if c.MaxRequestBodyBytes <= 0 {
		c.MaxRequestBodyBytes = endpoints.DefaultMaxRequestBodyBytes
	}
	if c.SecureServing.MinTLSVersion == 0 {
		c.SecureServing.MinTLSVersion = tls.VersionTLS12
	}
	if c.SecureServing.MinTLSVersion < tls.VersionTLS12 {
		return CompletedConfig{}, errors.New("server: TLS versions below 1.2 are not supported")
	}
	if c.Authenticator == nil {
		if c.SecureServing.ClientCA != nil {
			c.Authenticator = authn.NewX509(c.SecureServing.ClientCA)
		} else {
			// No way to authenticate anyone: every request is refused, as
			// it should be when nothing was configured.
			c.Authenticator = authn.Func(func(*http.Request) (*authn.Response, bool, error) { return nil, false, nil })
		}
	}
	if c.Authorizer == nil {
		c.Authorizer = authz.AlwaysAllow()
	}
	if c.FlowControl == nil {
		fc, err := DefaultFlowControl(c)
		if err != nil {
			return CompletedConfig{}, err
		}
		c.FlowControl = fc
	}
	if sl, ok := c.FlowControl.(metrics.SeatLimiter); ok {
		// Already registered when Complete runs again: nothing to do.
		_ = c.Metrics.RegisterSeatLimits(sl)
	}
	if c.SecureServing.Certificate == nil {
		cert, err := c.selfSignedCertificate()
		if err != nil {
			return CompletedConfig{}, fmt.Errorf("server: self-signed serving certificate: %w", err)
		}
		c.SecureServing.Certificate = cert
	}
	return CompletedConfig{&completedConfig{c}}, nil
}

// selfSignedCertificate makes (or reloads from CertDir, see
// certs.SelfSigned) a CA and a serving certificate for localhost, the
// loopback addresses, the external address and the alternates.
func (c *Config) selfSignedCertificate() (*tls.Certificate, error) {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(c.ExternalAddress); err == nil && h != "" {
		hosts = append(hosts, h)
	} else if c.ExternalAddress != "" {
		hosts = append(hosts, c.ExternalAddress)
	}
	if b := c.SecureServing.BindAddress; b != "" && b != "0.0.0.0" && b != "::" {
		hosts = append(hosts, b)
	}
	hosts = append(hosts, c.SecureServing.AlternateDNS...)
	for _, ip := range c.SecureServing.AlternateIPs {
		hosts = append(hosts, ip.String())
	}
	hosts = dedupe(hosts)
	ca, pair, err := certs.SelfSigned(c.SecureServing.CertDir, hosts)
	if err != nil {
		return nil, err
	}
	c.SecureServing.CABundle = ca.CertPEM
	cert, err := pair.TLSCertificate()
	if err != nil {
		return nil, err
	}
	return &cert, nil
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// DefaultFlowControl returns the flow-control policy c's fields ask for:
// API Priority and Fairness with kube-apiserver's default configuration
// and the sum of both in-flight limits as its concurrency, or, without
// priority and fairness, the plain max-in-flight limits (nil when both are
// 0: nothing is limited).
func DefaultFlowControl(c *Config) (flowcontrol.Interface, error) {
	if !c.EnablePriorityAndFairness {
		if c.MaxRequestsInFlight <= 0 && c.MaxMutatingRequestsInFlight <= 0 {
			return nil, nil
		}
		return flowcontrol.NewMaxInFlight(c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight), nil
	}
	apf, err := flowcontrol.NewAPF(flowcontrol.APFConfig{
		ServerConcurrencyLimit: c.MaxRequestsInFlight + c.MaxMutatingRequestsInFlight,
		RequestWaitLimit:       c.RequestWaitLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("server: priority and fairness: %w", err)
	}
	return apf, nil
}
