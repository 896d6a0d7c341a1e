package options

import (
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authn/serviceaccount"
)

// Bounds and constants of service-account tokens, as kube-apiserver has
// them.
const (
	// MinTokenExpiration and MaxTokenExpiration bound
	// --service-account-max-token-expiration.
	MinTokenExpiration = time.Hour
	MaxTokenExpiration = time.Duration(1<<32) * time.Second
	// WarnOnlyBoundTokenExpirationSeconds is the lifetime of the tokens
	// kube-apiserver injects into pods while their use past one hour is
	// only reported (--service-account-extend-token-expiration).
	WarnOnlyBoundTokenExpirationSeconds = 60*60 + 7
	// ExpirationExtensionSeconds is how long such tokens really last.
	ExpirationExtensionSeconds = 24 * 365 * 60 * 60
)

// ServiceAccountOptions configure service-account tokens: who issues them,
// the key that signs them and the keys that verify them.
type ServiceAccountOptions struct {
	// Issuers are accepted in tokens; the first signs new ones.
	Issuers []string
	// SigningKeyFile holds the private key new tokens are signed with.
	SigningKeyFile string
	// KeyFiles hold the public (or private) keys tokens are verified with;
	// empty means the signing key's.
	KeyFiles []string
	// MaxExpiration caps the lifetime of requested tokens; 0 means no cap.
	MaxExpiration time.Duration
	// ExtendExpiration lets injected tokens live a year while their use
	// past the first hour is only reported.
	ExtendExpiration bool

	// Set by Complete.

	// SigningKey is the parsed SigningKeyFile.
	SigningKey crypto.Signer
	// PublicKeys verify tokens: those of KeyFiles, or the signing key's.
	PublicKeys []crypto.PublicKey
	// Generator signs tokens as the first issuer; nil without a signing
	// key.
	Generator *serviceaccount.Generator
	// Authenticator verifies the tokens, set by the authentication
	// options; nil when they are not authenticated here.
	Authenticator *serviceaccount.Authenticator
}

// tokens is what the server's TokenRequest needs, nil without a Generator.
func (o *ServiceAccountOptions) tokens(apiAudiences []string) *serviceaccount.Tokens {
	if o.Generator == nil {
		return nil
	}
	return &serviceaccount.Tokens{Generator: o.Generator, Authenticator: o.Authenticator,
		APIAudiences: apiAudiences, MaxExpiration: o.MaxExpiration}
}

// NewServiceAccountOptions returns kube-apiserver's defaults.
func NewServiceAccountOptions() *ServiceAccountOptions {
	return &ServiceAccountOptions{ExtendExpiration: true}
}

// AddFlags adds the service-account flags.
func (o *ServiceAccountOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Issuers, "service-account-issuer", o.Issuers,
		"Identifier of the service account token issuer. The issuer will assert this identifier in \"iss\" claim of issued tokens. "+
			"This value is a string or URI; it is highly recommended that it be an https URL that serves OpenID discovery documents. "+
			"When this flag is specified multiple times, the first is used to generate tokens and all are used to determine which issuers are accepted.")
	fs.StringVar(&o.SigningKeyFile, "service-account-signing-key-file", o.SigningKeyFile,
		"Path to the file that contains the current private key of the service account token issuer. The issuer will sign issued ID tokens with this private key.")
	fs.StringArrayVar(&o.KeyFiles, "service-account-key-file", o.KeyFiles,
		"File containing PEM-encoded x509 RSA or ECDSA private or public keys, used to verify ServiceAccount tokens. "+
			"The specified file can contain multiple keys, and the flag can be specified multiple times with different files. "+
			"If unspecified, the public key of --service-account-signing-key-file is used.")
	fs.DurationVar(&o.MaxExpiration, "service-account-max-token-expiration", o.MaxExpiration,
		"The maximum validity duration of a token created by the service account token issuer. "+
			"If an otherwise valid TokenRequest with a validity duration larger than this value is requested, a token will be issued with a validity duration of this value.")
	fs.BoolVar(&o.ExtendExpiration, "service-account-extend-token-expiration", o.ExtendExpiration,
		"Turns on projected service account expiration extension during token generation, which helps safe transition from legacy token to bound service account token feature. "+
			"If this flag is enabled, admission injected tokens would be extended up to 1 year to prevent unexpected failure during transition, ignoring value of service-account-max-token-expiration.")
}

// Validate checks the issuers and the expiration bounds, with
// kube-apiserver's messages.
func (o *ServiceAccountOptions) Validate() []error {
	var errs []error
	seen := map[string]bool{}
	for _, issuer := range o.Issuers {
		if strings.Contains(issuer, ":") {
			if _, err := url.Parse(issuer); err != nil {
				errs = append(errs, fmt.Errorf("service-account-issuer %q contained a ':' but was not a valid URL: %v", issuer, err))
				continue
			}
		}
		if issuer == "" {
			errs = append(errs, errors.New("service-account-issuer should not be an empty string"))
			continue
		}
		if seen[issuer] {
			errs = append(errs, fmt.Errorf("service-account-issuer %q is already specified", issuer))
			continue
		}
		seen[issuer] = true
	}
	if o.SigningKeyFile != "" && len(o.Issuers) == 0 {
		errs = append(errs, errors.New("--service-account-signing-key-file requires --service-account-issuer"))
	}
	if o.MaxExpiration != 0 && (o.MaxExpiration < MinTokenExpiration || o.MaxExpiration > MaxTokenExpiration) {
		errs = append(errs, errors.New("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"))
	}
	return errs
}

// loadKeys parses the signing key and the verification keys; each error
// names its flag and file.
func (o *ServiceAccountOptions) loadKeys() []error {
	var errs []error
	o.SigningKey, o.PublicKeys = nil, nil
	if o.SigningKeyFile != "" {
		key, err := serviceaccount.PrivateKeyFromFile(o.SigningKeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to parse --service-account-signing-key-file: %w", err))
		} else {
			o.SigningKey = key
		}
	}
	for _, f := range o.KeyFiles {
		keys, err := serviceaccount.PublicKeysFromFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to parse --service-account-key-file: %w", err))
			continue
		}
		o.PublicKeys = append(o.PublicKeys, keys...)
	}
	if len(o.KeyFiles) == 0 && o.SigningKey != nil {
		o.PublicKeys = []crypto.PublicKey{o.SigningKey.Public()}
	}
	return errs
}

// DevServiceAccountIssuer is the issuer of the development PKI's tokens
// when --service-account-issuer is not given. The .invalid domain never
// resolves: the name only tells these tokens apart.
const DevServiceAccountIssuer = "https://dev-pki.apikit.invalid"

// defaultDevSigningKey gives the development PKI a signing key, so that
// the token command works out of the box: when no key file is given, the
// key in certDir/sa.key (made on first start, reused on every later one)
// signs and verifies tokens, as DevServiceAccountIssuer unless an issuer
// is given.
func (o *ServiceAccountOptions) defaultDevSigningKey(certDir string, log *slog.Logger) error {
	if certDir == "" || o.SigningKeyFile != "" || len(o.KeyFiles) > 0 {
		return nil
	}
	path := filepath.Join(certDir, serviceaccount.SigningKeyFile)
	key, err := serviceaccount.LoadOrCreateSigningKey(path)
	if err != nil {
		return err
	}
	o.SigningKeyFile, o.SigningKey = path, key
	o.PublicKeys = []crypto.PublicKey{key.Public()}
	if len(o.Issuers) == 0 {
		o.Issuers = []string{DevServiceAccountIssuer}
	}
	log.Debug("development PKI: service account signing key", "path", path, "issuer", o.Issuers[0])
	return nil
}

// Complete warns about expirations that defeat the extension, as
// kube-apiserver does, and builds the Generator for the first issuer.
// loadKeys must have run.
func (o *ServiceAccountOptions) Complete(log *slog.Logger) error {
	if o.MaxExpiration != 0 && o.ExtendExpiration {
		if o.MaxExpiration < WarnOnlyBoundTokenExpirationSeconds*time.Second {
			log.Warn(fmt.Sprintf("service-account-extend-token-expiration is true, in order to correctly trigger safe transition logic, "+
				"service-account-max-token-expiration must be set longer than %d seconds (currently %s)", WarnOnlyBoundTokenExpirationSeconds, o.MaxExpiration))
		}
		if o.MaxExpiration < ExpirationExtensionSeconds*time.Second {
			log.Warn(fmt.Sprintf("service-account-extend-token-expiration is true, enabling tokens valid up to %d seconds, "+
				"which is longer than service-account-max-token-expiration set to %s", ExpirationExtensionSeconds, o.MaxExpiration))
		}
	}
	o.Generator = nil
	if o.SigningKey != nil && len(o.Issuers) > 0 {
		g, err := serviceaccount.NewGenerator(o.Issuers[0], o.SigningKey)
		if err != nil {
			return fmt.Errorf("failed to build token generator: %w", err)
		}
		o.Generator = g
	}
	return nil
}
