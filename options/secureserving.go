package options

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/server"
)

// SecureServingOptions say where the server listens and with which
// certificate.
type SecureServingOptions struct {
	// BindAddress and BindPort are where the server listens; a nil or
	// unspecified address listens on every interface. Port 0 picks a free
	// port (Complete opens the listener to learn it).
	BindAddress net.IP
	BindPort    int
	// Listener, when set, is served as is; BindAddress and BindPort only
	// name it. Not a flag: for tests and embedding.
	Listener net.Listener
	// CertDirectory keeps a generated serving certificate and its CA; it
	// defaults to <data-dir>/pki.
	CertDirectory string
	// CertFile and KeyFile are the serving certificate (with its chain) and
	// key; when both are empty a self-signed certificate is generated.
	CertFile, KeyFile string
	// MinTLSVersion is a crypto/tls version name, like VersionTLS12.
	MinTLSVersion string
	// CipherSuites are crypto/tls cipher suite names; empty is Go's
	// default.
	CipherSuites []string
	// DevPKI makes a development PKI when neither --tls-cert-file nor
	// --client-ca-file is given: see ServerRunOptions.Complete.
	DevPKI bool
	// AlternateDNS and AlternateIPs are added to a generated certificate.
	// A program sets them (a Service's DNS names, say); the operator adds
	// to them with --tls-san.
	AlternateDNS []string
	AlternateIPs []net.IP
	// SANs are more host names and IP addresses a generated serving
	// certificate is valid for (--tls-san): the name a front server
	// checks, <service>.<namespace>.svc for kube-apiserver's aggregator.
	SANs []string

	// Set by Complete.

	// Certificate is the serving certificate, loaded or generated.
	Certificate *tls.Certificate
	// CA signed a generated serving certificate; nil when CertFile is set.
	CA *certs.CA
	// keyPair reloads --tls-cert-file and --tls-private-key-file.
	keyPair *certs.KeyPairFiles
	// AdminKubeconfig is the kubeconfig the development PKI wrote, if any.
	AdminKubeconfig string
}

// NewSecureServingOptions returns the defaults: 127.0.0.1:8443, TLS 1.2 and
// later, a development PKI.
func NewSecureServingOptions() *SecureServingOptions {
	return &SecureServingOptions{
		BindAddress:   net.IPv4(127, 0, 0, 1),
		BindPort:      8443,
		MinTLSVersion: "VersionTLS12",
		DevPKI:        true,
	}
}

// AddFlags adds the secure serving flags.
func (o *SecureServingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IPVar(&o.BindAddress, "bind-address", o.BindAddress,
		"The IP address on which to listen for the --secure-port port. The associated interface(s) must be reachable by the rest of the cluster, and by CLI/web clients. "+
			"If blank or an unspecified address (0.0.0.0 or ::), all interfaces and IP address families will be used.")
	fs.IntVar(&o.BindPort, "secure-port", o.BindPort,
		"The port on which to serve HTTPS with authentication and authorization. 0 picks a free port.")
	fs.StringVar(&o.CertDirectory, "cert-dir", o.CertDirectory,
		"The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored. "+
			"If blank, <data-dir>/pki.")
	fs.StringVar(&o.CertFile, "tls-cert-file", o.CertFile,
		"File containing the default x509 Certificate for HTTPS. (CA cert, if any, concatenated after server cert). "+
			"If --tls-cert-file and --tls-private-key-file are not provided, a self-signed certificate and key are generated for the public address "+
			"and saved to the directory specified by --cert-dir.")
	fs.StringVar(&o.KeyFile, "tls-private-key-file", o.KeyFile,
		"File containing the default x509 private key matching --tls-cert-file.")
	fs.StringVar(&o.MinTLSVersion, "tls-min-version", o.MinTLSVersion,
		"Minimum TLS version supported. Possible values: VersionTLS12, VersionTLS13")
	fs.StringSliceVar(&o.CipherSuites, "tls-cipher-suites", o.CipherSuites,
		"Comma-separated list of cipher suites for the server. If omitted, the default Go cipher suites will be used. "+
			"Preferred values: "+strings.Join(secureCipherNames(), ", ")+".")
	fs.StringSliceVar(&o.SANs, "tls-san", o.SANs,
		"Additional host names or IP addresses the generated serving certificate is valid for (comma separated, repeatable), "+
			"such as the DNS name of a Service in front of the server: kube-apiserver's aggregator checks <service>.<namespace>.svc. "+
			"Not with --tls-cert-file.")
	fs.BoolVar(&o.DevPKI, "dev-pki", o.DevPKI,
		"Make a development PKI when neither --tls-cert-file nor --client-ca-file is given: the CA in --cert-dir that signs the serving certificate "+
			"also verifies client certificates, and an admin client certificate (CN=admin, O=system:masters) is issued with a kubeconfig for it in "+
			"<data-dir>/kubeconfig. Kept and reused across restarts. Giving real certificates, or --dev-pki=false, skips it.")
}

// Validate checks the port, the certificate flags and the TLS settings.
func (o *SecureServingOptions) Validate() []error {
	var errs []error
	if o.BindPort < 0 || o.BindPort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %v must be between 0 and 65535, inclusive. 0 picks a free port", o.BindPort))
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file must be given together"))
	}
	if _, err := tlsVersion(o.MinTLSVersion); err != nil {
		errs = append(errs, err)
	}
	if _, err := cipherSuites(o.CipherSuites); err != nil {
		errs = append(errs, err)
	}
	if len(o.SANs) > 0 && o.CertFile != "" {
		errs = append(errs, errors.New("--tls-san names hosts of the generated certificate; it cannot change --tls-cert-file"))
	}
	for _, san := range o.SANs {
		if net.ParseIP(san) == nil {
			if msgs := meta.ValidateDNS1123Subdomain(strings.TrimPrefix(san, "*.")); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("--tls-san %q is neither an IP address nor a DNS name: %s", san, strings.Join(msgs, "; ")))
			}
		}
	}
	if o.MinTLSVersion == "VersionTLS13" && len(o.CipherSuites) > 0 {
		errs = append(errs, errors.New("cipher suites may not be specified when --tls-min-version is 'VersionTLS13'"))
	}
	return errs
}

// loadCertificate loads --tls-cert-file and --tls-private-key-file.
func (o *SecureServingOptions) loadCertificate() error {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil // none given, or Validate reports the missing one
	}
	kp, err := certs.NewKeyPairFiles(o.CertFile, o.KeyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
	}
	o.Certificate, o.CA, o.keyPair = kp.Current(), nil, kp
	return nil
}

// MaybeDefaultWithSelfSignedCerts generates, when no certificate was given,
// a CA and a serving certificate for hosts in CertDirectory (in memory when
// it is empty), reusing those of an earlier start.
func (o *SecureServingOptions) MaybeDefaultWithSelfSignedCerts(hosts []string) error {
	if o.CertFile != "" {
		return nil
	}
	ca, pair, err := certs.SelfSigned(o.CertDirectory, hosts)
	if err != nil {
		return fmt.Errorf("error creating self-signed certificates: %w", err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		return fmt.Errorf("error creating self-signed certificates: %w", err)
	}
	o.Certificate, o.CA = &cert, ca
	return nil
}

// listen opens the listener when the port is 0, so that the port is known
// before the server runs (for the kubeconfig, say).
func (o *SecureServingOptions) listen() error {
	if o.Listener != nil || o.BindPort != 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.bindHost(), "0"))
	if err != nil {
		return fmt.Errorf("--secure-port=0: %w", err)
	}
	o.Listener = ln
	o.BindPort = ln.Addr().(*net.TCPAddr).Port
	return nil
}

func (o *SecureServingOptions) bindHost() string {
	if o.BindAddress == nil {
		return ""
	}
	return o.BindAddress.String()
}

// localURL is where a client on this machine reaches the server.
func (o *SecureServingOptions) localURL() string {
	host := "127.0.0.1"
	if o.BindAddress != nil && !o.BindAddress.IsUnspecified() {
		host = o.BindAddress.String()
	}
	port := o.BindPort
	if o.Listener != nil {
		if a, ok := o.Listener.Addr().(*net.TCPAddr); ok {
			port = a.Port
		}
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// ApplyTo sets the listener, certificate and TLS settings, and adds the
// port to the external address.
func (o *SecureServingOptions) ApplyTo(c *server.Config) error {
	ss := &c.SecureServing
	ss.Listener = o.Listener
	ss.BindAddress = o.bindHost()
	ss.Port = o.BindPort
	ss.Certificate = o.Certificate
	if o.keyPair != nil {
		// A rotated --tls-cert-file is served from the next handshake.
		ss.GetCertificate = o.keyPair.GetCertificate
	}
	ss.CertDir = o.CertDirectory
	if o.CA != nil {
		ss.CABundle = o.CA.CertPEM
	}
	ss.AlternateDNS = append(ss.AlternateDNS, o.AlternateDNS...)
	ss.AlternateIPs = append(ss.AlternateIPs, o.AlternateIPs...)
	v, err := tlsVersion(o.MinTLSVersion)
	if err != nil {
		return err
	}
	ss.MinTLSVersion = v
	if ss.CipherSuites, err = cipherSuites(o.CipherSuites); err != nil {
		return err
	}
	if c.ExternalAddress != "" {
		if _, _, err := net.SplitHostPort(c.ExternalAddress); err != nil {
			c.ExternalAddress = net.JoinHostPort(c.ExternalAddress, strconv.Itoa(o.BindPort))
		}
	}
	return nil
}

func tlsVersion(name string) (uint16, error) {
	switch name {
	case "", "VersionTLS12":
		return tls.VersionTLS12, nil
	case "VersionTLS13":
		return tls.VersionTLS13, nil
	case "VersionTLS10", "VersionTLS11":
		return 0, fmt.Errorf("--tls-min-version %s is not supported: apikit serves TLS 1.2 and later", name)
	}
	return 0, fmt.Errorf("unknown tls version %q", name)
}

func cipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s.ID
	}
	ids := make([]uint16, 0, len(names))
	for _, n := range names {
		id, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("Cipher suite %s not supported or doesn't exist", n)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func secureCipherNames() []string {
	var names []string
	for _, s := range tls.CipherSuites() {
		// TLS 1.3 suites are not configurable: list those of TLS 1.2.
		if containsVersion(s.SupportedVersions, tls.VersionTLS12) {
			names = append(names, s.Name)
		}
	}
	sort.Strings(names)
	return names
}

func containsVersion(vs []uint16, v uint16) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// certHosts are the names a generated serving certificate covers.
func certHosts(advertise, serviceIP, bind net.IP, externalHost string, altDNS []string, altIPs []net.IP, sans []string) []string {
	var hosts []string
	add := func(h string) {
		if h == "" {
			return
		}
		for _, x := range hosts {
			if x == h {
				return
			}
		}
		hosts = append(hosts, h)
	}
	ipString := func(ip net.IP) string {
		if ip == nil || ip.IsUnspecified() {
			return ""
		}
		return ip.String()
	}
	add(ipString(advertise))
	add(ipString(serviceIP))
	add("localhost")
	add("127.0.0.1")
	add("::1")
	add(ipString(bind))
	add(externalHost)
	for _, d := range altDNS {
		add(d)
	}
	for _, ip := range altIPs {
		add(ipString(ip))
	}
	for _, h := range sans {
		add(h)
	}
	return hosts
}

// devKubeconfigPath is where the development PKI writes the admin
// kubeconfig: in the data directory, else beside the certificates.
func devKubeconfigPath(dataDir, certDir string) string {
	switch {
	case dataDir != "":
		return filepath.Join(dataDir, "kubeconfig")
	case certDir != "":
		return filepath.Join(certDir, "kubeconfig")
	}
	return ""
}
