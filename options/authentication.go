package options

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/authn/delegation"
	"github.com/apikit-dev/apikit/authn/oidc"
	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/authn/webhook"
	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/server/system"
)

// AuthenticationOptions choose how the server identifies callers, with
// kube-apiserver's flags: client certificates, the front proxy's request
// headers, static tokens, service-account and user tokens (see
// ServiceAccountOptions), OIDC and other JWT issuers, a TokenReview
// webhook, and anonymous requests. Complete builds one authenticator from
// them, in kube-apiserver's order: request headers, client certificates,
// bearer tokens (token file, service-account keys, JWT issuers, webhook;
// cached), then anonymous.
//
// With --authentication-kubeconfig the server is a delegated API server,
// as sample-apiserver is behind kube-apiserver: bearer tokens go to the
// front server as TokenReviews, and, unless --authentication-skip-lookup,
// the front server's kube-system/extension-apiserver-authentication
// ConfigMap supplies the client CA and the front proxy's CA, names and
// headers that the flags do not, and is watched for changes.
type AuthenticationOptions struct {
	// ClientCAFile verifies client certificates (reloaded when it
	// changes).
	ClientCAFile string
	// Anonymous lets requests without credentials in as system:anonymous.
	Anonymous bool
	// TokenAuthFile holds static tokens (token,user,uid,"group1,group2"),
	// reloaded when it changes.
	TokenAuthFile string
	// APIAudiences are the audiences tokens for this server must be
	// meant for; empty means the service-account issuers.
	APIAudiences []string
	// OIDC configures one OpenID Connect issuer by flags.
	OIDC OIDCOptions
	// ConfigFile is a structured AuthenticationConfiguration (JWT issuers
	// and anonymous access); it excludes the --oidc-* flags.
	ConfigFile string
	// RequestHeader configures the front proxy.
	RequestHeader RequestHeaderOptions
	// WebhookConfigFile is the kubeconfig of a TokenReview webhook;
	// WebhookCacheTTL how long its answers are kept; WebhookVersion the
	// TokenReview version it speaks.
	WebhookConfigFile string
	WebhookCacheTTL   time.Duration
	WebhookVersion    string
	// RemoteKubeconfigFile is the kubeconfig of the front server this one
	// is delegated from (--authentication-kubeconfig): its URL, CA and the
	// credentials of this server, which must be allowed to create
	// TokenReviews (system:auth-delegator) and read the
	// extension-apiserver-authentication ConfigMap in kube-system
	// (extension-apiserver-authentication-reader).
	RemoteKubeconfigFile string
	// SkipInClusterLookup does not read the ConfigMap
	// (--authentication-skip-lookup).
	SkipInClusterLookup bool
	// TolerateInClusterLookupFailure starts the server even when the
	// ConfigMap cannot be read (the front server is down, or refuses):
	// it is then read again in the background
	// (--authentication-tolerate-lookup-failure). A ConfigMap that does
	// not exist, or lacks keys, never stops the server.
	TolerateInClusterLookupFailure bool
	// TokenSuccessCacheTTL and TokenFailureCacheTTL are how long the
	// bearer-token authenticators' answers are kept: kube-apiserver's 10
	// seconds for successes and none for failures. Not flags.
	TokenSuccessCacheTTL, TokenFailureCacheTTL time.Duration

	// Set by Complete.

	// ClientCA verifies client certificates: ClientCAFile (reloaded), or
	// the development PKI's CA.
	ClientCA authn.CAProvider
	// Config is ConfigFile, parsed.
	Config *oidc.AuthenticationConfiguration
	// TokenAuthenticator checks bearer tokens (cached): what the bearer
	// authenticator and TokenReview ask. Nil when no token authentication
	// is configured.
	TokenAuthenticator authn.TokenAuthenticator
	// Authenticator is the whole authenticator ApplyTo gives the server.
	Authenticator authn.Authenticator

	// Delegation reads the front server's ConfigMap; nil without
	// --authentication-kubeconfig or with --authentication-skip-lookup.
	Delegation *delegation.Source

	requestHeaderCA *authn.CAFile
	tokenFile       *authn.TokenFile
	jwtIssuers      []*oidc.Authenticator
	webhook         certs.Kubeconfig
	remote          certs.Kubeconfig
	// delegationRV is the ConfigMap's resourceVersion when Complete read
	// it; the watch goes on from there.
	delegationRV string
}

// OIDCOptions are the --oidc-* flags: one issuer.
type OIDCOptions struct {
	IssuerURL      string
	ClientID       string
	CAFile         string
	UsernameClaim  string
	UsernamePrefix string
	GroupsClaim    string
	GroupsPrefix   string
	SigningAlgs    []string
	RequiredClaims map[string]string
}

// RequestHeaderOptions are the --requestheader-* flags.
type RequestHeaderOptions struct {
	ClientCAFile        string
	AllowedNames        []string
	UsernameHeaders     []string
	UIDHeaders          []string
	GroupHeaders        []string
	ExtraHeaderPrefixes []string
}

// NewAuthenticationOptions returns the defaults: no client CA of its own
// (the development PKI provides one), anonymous requests refused, the
// front proxy's usual X-Remote-* headers, a 2-minute webhook cache and
// kube-apiserver's 10-second token cache.
func NewAuthenticationOptions() *AuthenticationOptions {
	return &AuthenticationOptions{
		OIDC: OIDCOptions{UsernameClaim: "sub", SigningAlgs: []string{"RS256"}},
		RequestHeader: RequestHeaderOptions{
			UsernameHeaders:     []string{"X-Remote-User"},
			GroupHeaders:        []string{"X-Remote-Group"},
			ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		},
		WebhookCacheTTL:      2 * time.Minute,
		WebhookVersion:       webhook.V1,
		TokenSuccessCacheTTL: 10 * time.Second,
	}
}

// AddFlags adds the authentication flags.
func (o *AuthenticationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile,
		"If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated "+
			"with an identity corresponding to the CommonName of the client certificate. The file is reloaded when it changes.")
	fs.BoolVar(&o.Anonymous, "anonymous-auth", o.Anonymous,
		"Enables anonymous requests to the secure port of the API server. Requests that are not rejected by another authentication method "+
			"are treated as anonymous requests. Anonymous requests have a username of system:anonymous, and a group name of system:unauthenticated.")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile,
		"If set, the file that will be used to secure the secure port of the API server via token authentication: "+
			"lines of token,user,uid,\"group1,group2\". The file is reloaded when it changes; a removed line revokes its token.")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences,
		"Identifiers of the API. The service account token authenticator will validate that tokens used against the API are bound to at least one of these audiences. "+
			"If the --service-account-issuer flag is configured and this flag is not, this field defaults to the issuers.")
	fs.StringVar(&o.ConfigFile, "authentication-config", o.ConfigFile,
		"File with Authentication Configuration (apiserver.config.k8s.io AuthenticationConfiguration) to configure the JWT token authenticators "+
			"or the anonymous authenticator. Mutually exclusive with the --oidc-* flags.")

	fs.StringVar(&o.OIDC.IssuerURL, "oidc-issuer-url", o.OIDC.IssuerURL,
		"The URL of the OpenID issuer, only HTTPS scheme will be accepted. If set, it will be used to verify the OIDC JSON Web Token (JWT).")
	fs.StringVar(&o.OIDC.ClientID, "oidc-client-id", o.OIDC.ClientID,
		"The client ID for the OpenID Connect client, must be set if oidc-issuer-url is set.")
	fs.StringVar(&o.OIDC.CAFile, "oidc-ca-file", o.OIDC.CAFile,
		"If set, the OpenID server's certificate will be verified by one of the authorities in the oidc-ca-file, otherwise the host's root CA set will be used.")
	fs.StringVar(&o.OIDC.UsernameClaim, "oidc-username-claim", o.OIDC.UsernameClaim,
		"The OpenID claim to use as the user name. Note that claims other than the default ('sub') is not guaranteed to be unique and immutable.")
	fs.StringVar(&o.OIDC.UsernamePrefix, "oidc-username-prefix", o.OIDC.UsernamePrefix,
		"If provided, all usernames will be prefixed with this value. If not provided, username claims other than 'email' are prefixed by the issuer URL "+
			"to avoid clashes. To skip any prefixing, provide the value '-'.")
	fs.StringVar(&o.OIDC.GroupsClaim, "oidc-groups-claim", o.OIDC.GroupsClaim,
		"If provided, the name of a custom OpenID Connect claim for specifying user groups. The claim value is expected to be a string or array of strings.")
	fs.StringVar(&o.OIDC.GroupsPrefix, "oidc-groups-prefix", o.OIDC.GroupsPrefix,
		"If provided, all groups will be prefixed with this value to prevent conflicts with other authentication strategies.")
	fs.StringSliceVar(&o.OIDC.SigningAlgs, "oidc-signing-algs", o.OIDC.SigningAlgs,
		"Comma-separated list of allowed JOSE asymmetric signing algorithms. JWTs with a supported 'alg' header values are: "+
			"RS256, RS384, RS512, ES256, ES384, ES512, PS256, PS384, PS512, EdDSA. Values are defined by RFC 7518 https://tools.ietf.org/html/rfc7518#section-3.1.")
	fs.StringToStringVar(&o.OIDC.RequiredClaims, "oidc-required-claim", o.OIDC.RequiredClaims,
		"A key=value pair that describes a required claim in the ID Token. If set, the claim is verified to be present in the ID Token with a matching value. "+
			"Repeat this flag to specify multiple claims.")

	fs.StringVar(&o.RequestHeader.ClientCAFile, "requestheader-client-ca-file", o.RequestHeader.ClientCAFile,
		"Root certificate bundle to use to verify client certificates on incoming requests before trusting usernames in headers specified by "+
			"--requestheader-username-headers. WARNING: generally do not depend on authorization being already done for incoming requests.")
	fs.StringSliceVar(&o.RequestHeader.AllowedNames, "requestheader-allowed-names", o.RequestHeader.AllowedNames,
		"List of client certificate common names to allow to provide usernames in headers specified by --requestheader-username-headers. "+
			"If empty, any client certificate validated by the authorities in --requestheader-client-ca-file is allowed.")
	fs.StringSliceVar(&o.RequestHeader.UsernameHeaders, "requestheader-username-headers", o.RequestHeader.UsernameHeaders,
		"List of request headers to inspect for usernames. X-Remote-User is common.")
	fs.StringSliceVar(&o.RequestHeader.UIDHeaders, "requestheader-uid-headers", o.RequestHeader.UIDHeaders,
		"List of request headers to inspect for UIDs. X-Remote-Uid is suggested.")
	fs.StringSliceVar(&o.RequestHeader.GroupHeaders, "requestheader-group-headers", o.RequestHeader.GroupHeaders,
		"List of request headers to inspect for groups. X-Remote-Group is suggested.")
	fs.StringSliceVar(&o.RequestHeader.ExtraHeaderPrefixes, "requestheader-extra-headers-prefix", o.RequestHeader.ExtraHeaderPrefixes,
		"List of request header prefixes to inspect. X-Remote-Extra- is suggested.")

	fs.StringVar(&o.WebhookConfigFile, "authentication-token-webhook-config-file", o.WebhookConfigFile,
		"File with webhook configuration for token authentication in kubeconfig format. The API server will query the remote service "+
			"to determine authentication for bearer tokens.")
	fs.DurationVar(&o.WebhookCacheTTL, "authentication-token-webhook-cache-ttl", o.WebhookCacheTTL,
		"The duration to cache responses from the webhook token authenticator.")
	fs.StringVar(&o.WebhookVersion, "authentication-token-webhook-version", o.WebhookVersion,
		"The API version of the authentication.k8s.io TokenReview to send to and expect from the webhook: v1 or v1beta1.")

	fs.StringVar(&o.RemoteKubeconfigFile, "authentication-kubeconfig", o.RemoteKubeconfigFile,
		"kubeconfig file pointing at the 'core' kubernetes server with enough rights to create tokenreviews.authentication.k8s.io "+
			"(and to read the extension-apiserver-authentication ConfigMap in kube-system). Makes this server a delegated API server: "+
			"bearer tokens it does not know are reviewed by that server. If empty, the server runs standalone.")
	fs.BoolVar(&o.SkipInClusterLookup, "authentication-skip-lookup", o.SkipInClusterLookup,
		"If false, the authentication-kubeconfig will be used to lookup missing authentication configuration from the cluster "+
			"(configmap/extension-apiserver-authentication in kube-system), which is then watched for changes.")
	fs.BoolVar(&o.TolerateInClusterLookupFailure, "authentication-tolerate-lookup-failure", o.TolerateInClusterLookupFailure,
		"If true, failures to look up missing authentication configuration from the cluster are not considered fatal. "+
			"Note that this can result in authentication that treats all requests as anonymous.")
}

// Validate checks the flags that can be checked without reading files,
// with kube-apiserver's messages.
func (o *AuthenticationOptions) Validate() []error {
	var errs []error
	oidcFlags := o.OIDC.IssuerURL != "" || o.OIDC.ClientID != ""
	if (o.OIDC.IssuerURL != "") != (o.OIDC.ClientID != "") {
		errs = append(errs, errors.New("oidc-issuer-url and oidc-client-id should be specified together"))
	}
	if o.ConfigFile != "" && (oidcFlags || o.OIDC.CAFile != "" || o.OIDC.GroupsClaim != "" || o.OIDC.GroupsPrefix != "" ||
		o.OIDC.UsernamePrefix != "" || len(o.OIDC.RequiredClaims) > 0) {
		errs = append(errs, errors.New("authentication-config file and oidc-* flags are mutually exclusive"))
	}
	if o.OIDC.IssuerURL != "" && o.OIDC.UsernameClaim == "" {
		errs = append(errs, errors.New("oidc-username-claim must not be empty"))
	}
	if rh := o.RequestHeader; rh.ClientCAFile != "" && len(rh.UsernameHeaders) == 0 {
		errs = append(errs, errors.New("--requestheader-username-headers must be set with --requestheader-client-ca-file"))
	}
	if o.WebhookCacheTTL < 0 {
		errs = append(errs, errors.New("--authentication-token-webhook-cache-ttl can not be negative value"))
	}
	if o.RemoteKubeconfigFile == "" && (o.SkipInClusterLookup || o.TolerateInClusterLookupFailure) {
		errs = append(errs, errors.New("--authentication-skip-lookup and --authentication-tolerate-lookup-failure need --authentication-kubeconfig"))
	}
	if o.WebhookVersion != webhook.V1 && o.WebhookVersion != webhook.V1beta1 {
		errs = append(errs, fmt.Errorf("--authentication-token-webhook-version %q is not supported: use %s or %s", o.WebhookVersion, webhook.V1, webhook.V1beta1))
	}
	return errs
}

// load reads the files the flags name and checks what they configure;
// every problem is returned. Nothing is written.
func (o *AuthenticationOptions) load() []error {
	var errs []error
	o.ClientCA, o.requestHeaderCA, o.tokenFile, o.jwtIssuers, o.Config = nil, nil, nil, nil, nil
	if o.ClientCAFile != "" {
		ca, err := authn.NewCAFile(o.ClientCAFile)
		if err != nil {
			errs = append(errs, fileFlagError("--client-ca-file", err))
		} else {
			o.ClientCA = ca
		}
	}
	if f := o.RequestHeader.ClientCAFile; f != "" {
		ca, err := authn.NewCAFile(f)
		if err != nil {
			errs = append(errs, fileFlagError("--requestheader-client-ca-file", err))
		} else {
			o.requestHeaderCA = ca
		}
	}
	if o.TokenAuthFile != "" {
		tf, err := authn.NewTokenFile(o.TokenAuthFile)
		if err != nil {
			errs = append(errs, fileFlagError("--token-auth-file", err))
		} else {
			o.tokenFile = tf
		}
	}
	issuers, err := o.jwtIssuerConfigs()
	if err != nil {
		errs = append(errs, err)
	}
	for _, iss := range issuers {
		a, err := oidc.New(iss)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.jwtIssuers = append(o.jwtIssuers, a)
	}
	if o.Config != nil && o.Config.Anonymous != nil && o.Anonymous {
		errs = append(errs, errors.New("anonymous is configured in both --authentication-config and --anonymous-auth; use one"))
	}
	if o.WebhookConfigFile != "" {
		k, err := certs.ReadKubeconfig(o.WebhookConfigFile)
		if err == nil {
			_, err = k.ClientTLSConfig()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--authentication-token-webhook-config-file: %w", err))
		} else {
			o.webhook = k
		}
	}
	if o.RemoteKubeconfigFile != "" {
		k, err := certs.ReadKubeconfig(o.RemoteKubeconfigFile)
		if err == nil {
			_, err = k.ClientTLSConfig()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--authentication-kubeconfig: %w", err))
		} else {
			o.remote = k
		}
	}
	return errs
}

// fileFlagError words a file flag's error as the other file flags do:
// "--flag: open ...: no such file" when it could not be read, "--flag
// path: problem" when its content is wrong.
func fileFlagError(flag string, err error) error {
	var perr *authn.ParseError
	if errors.As(err, &perr) {
		return fmt.Errorf("%s %s: %w", flag, perr.Path, perr.Err)
	}
	return fmt.Errorf("%s: %w", flag, err)
}

// jwtIssuerConfigs reads the JWT issuers: from --authentication-config,
// or the one of the --oidc-* flags.
func (o *AuthenticationOptions) jwtIssuerConfigs() ([]oidc.Issuer, error) {
	if o.ConfigFile != "" {
		data, err := os.ReadFile(o.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("--authentication-config: %w", err)
		}
		c, err := oidc.ParseConfig(data)
		if err != nil {
			return nil, fmt.Errorf("--authentication-config %s: %w", o.ConfigFile, err)
		}
		o.Config = c
		var issuers []oidc.Issuer
		for _, j := range c.JWT {
			issuers = append(issuers, j.Config())
		}
		return issuers, nil
	}
	f := o.OIDC
	if f.IssuerURL == "" || f.ClientID == "" {
		return nil, nil
	}
	iss := oidc.Issuer{
		URL: f.IssuerURL, Audiences: []string{f.ClientID},
		UsernameClaim: f.UsernameClaim, GroupsClaim: f.GroupsClaim, GroupsPrefix: f.GroupsPrefix,
		SigningAlgorithms: f.SigningAlgs, RequiredClaims: f.RequiredClaims,
	}
	// kube-apiserver's legacy rule: without a prefix, names from claims
	// other than email are prefixed with the issuer, so that they cannot
	// pass for local users; "-" asks for no prefix.
	switch {
	case f.UsernamePrefix == "-":
	case f.UsernamePrefix != "":
		iss.UsernamePrefix = f.UsernamePrefix
	case f.UsernameClaim != "email":
		iss.UsernamePrefix = f.IssuerURL + "#"
	}
	if f.CAFile != "" {
		ca, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--oidc-ca-file: %w", err)
		}
		iss.CAPEM = ca
	}
	return []oidc.Issuer{iss}, nil
}

// ApplyAuthorization turns anonymous requests off under the AlwaysAllow
// authorizer, which would let anyone do anything, and says so, as
// kube-apiserver does.
func (o *AuthenticationOptions) ApplyAuthorization(authz *AuthorizationOptions, log *slog.Logger) {
	anonymous := o.Anonymous || (o.Config != nil && o.Config.Anonymous != nil && o.Config.Anonymous.Enabled)
	if !anonymous || authz == nil || !slices.Contains(authz.Modes, ModeAlwaysAllow) {
		return
	}
	log.Warn("AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer")
	o.Anonymous = false
	if o.Config != nil && o.Config.Anonymous != nil {
		o.Config.Anonymous.Enabled = false
	}
}

// audiences returns the API audiences: the flag's, else the
// service-account issuers.
func (o *AuthenticationOptions) audiences(sa *ServiceAccountOptions) authn.Audiences {
	if len(o.APIAudiences) > 0 || sa == nil {
		return o.APIAudiences
	}
	return sa.Issuers
}

// complete builds the authenticator (after the development PKI and the
// service-account keys are settled), in kube-apiserver's order: the front
// proxy's request headers, client certificates, bearer tokens (the token
// file, service-account and user JWTs, JWT issuers, the webhooks, behind
// one cache), then anonymous. A delegated server reads the front server's
// ConfigMap first (see lookup).
func (o *AuthenticationOptions) complete(sa *ServiceAccountOptions, log *slog.Logger) error {
	explicitAudiences := slices.Clone(o.APIAudiences)
	auds := o.audiences(sa)
	if len(o.APIAudiences) == 0 && len(auds) > 0 {
		o.APIAudiences = auds
	}
	if err := o.lookup(log); err != nil {
		return err
	}
	var authenticators []authn.Authenticator
	switch {
	case o.requestHeaderCA != nil:
		rh := o.RequestHeader
		a, err := authn.NewRequestHeader(authn.RequestHeaderConfig{
			CAs: o.requestHeaderCA, AllowedNames: rh.AllowedNames,
			UsernameHeaders: rh.UsernameHeaders, UIDHeaders: rh.UIDHeaders,
			GroupHeaders: rh.GroupHeaders, ExtraHeaderPrefixes: rh.ExtraHeaderPrefixes,
		})
		if err != nil {
			return fmt.Errorf("--requestheader-client-ca-file: %w", err)
		}
		authenticators = append(authenticators, a)
	case o.Delegation != nil:
		authenticators = append(authenticators, o.Delegation.RequestHeader())
	}
	if o.Delegation != nil && o.ClientCAFile == "" {
		// The development PKI's CA (if any) and the front server's.
		o.ClientCA = o.Delegation.ClientCA(o.ClientCA)
	}
	if o.ClientCA != nil {
		authenticators = append(authenticators, authn.NewX509(o.ClientCA))
	}

	var tokens []authn.TokenAuthenticator
	if o.tokenFile != nil {
		tokens = append(tokens, authn.AudienceAgnostic(auds, o.tokenFile))
	}
	if sa != nil && len(sa.PublicKeys) > 0 && len(sa.Issuers) > 0 {
		a, err := serviceaccount.NewAuthenticator(sa.Issuers, sa.PublicKeys, auds)
		if err != nil {
			return fmt.Errorf("service account tokens: %w", err)
		}
		sa.Authenticator = a
		tokens = append(tokens, a)
	}
	for _, a := range o.jwtIssuers {
		tokens = append(tokens, authn.AudienceAgnostic(auds, a))
	}
	if o.WebhookConfigFile != "" {
		t, err := o.newWebhook(o.webhook, auds, "--authentication-token-webhook-config-file")
		if err != nil {
			return err
		}
		tokens = append(tokens, t)
	}
	if o.RemoteKubeconfigFile != "" {
		// As k8s.io/apiserver's delegated authentication: the review names
		// only audiences given by --api-audiences, so that the front
		// server checks its own tokens against its own audiences.
		t, err := o.newWebhook(withPath(o.remote, "/apis/authentication.k8s.io/v1/tokenreviews"), explicitAudiences, "--authentication-kubeconfig")
		if err != nil {
			return err
		}
		tokens = append(tokens, t)
	}
	o.TokenAuthenticator = nil
	if len(tokens) > 0 {
		t := authn.UnionToken(tokens...)
		if o.TokenSuccessCacheTTL > 0 || o.TokenFailureCacheTTL > 0 {
			t = authn.NewTokenCache(t, authn.TokenCacheOptions{SuccessTTL: o.TokenSuccessCacheTTL, FailureTTL: o.TokenFailureCacheTTL, CacheErrors: true})
		}
		o.TokenAuthenticator = t
		authenticators = append(authenticators, authn.NewBearerToken(t))
	}

	a := authn.Union(authenticators...)
	switch anon := o.anonymousConfig(); {
	case o.Anonymous:
		a = authn.WithAnonymous(a, nil)
	case anon != nil && anon.Enabled:
		a = authn.WithAnonymous(a, anonymousPaths(anon.Conditions))
	}
	o.Authenticator = a
	return nil
}

// newWebhook is a TokenReview webhook behind its cache.
func (o *AuthenticationOptions) newWebhook(k certs.Kubeconfig, audiences []string, flag string) (authn.TokenAuthenticator, error) {
	w, err := webhook.New(webhook.Config{Kubeconfig: k, Version: o.WebhookVersion, ImplicitAudiences: audiences})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if o.WebhookCacheTTL <= 0 {
		return w, nil
	}
	return authn.NewTokenCache(w, authn.TokenCacheOptions{SuccessTTL: o.WebhookCacheTTL, FailureTTL: o.WebhookCacheTTL}), nil
}

// withPath is k with path appended to its server's URL: the kubeconfig of
// a front server, turned into that of one of its APIs.
func withPath(k certs.Kubeconfig, path string) certs.Kubeconfig {
	k.Server = strings.TrimSuffix(k.Server, "/") + path
	return k
}

// lookupTimeout bounds the read of the front server's ConfigMap at start.
const lookupTimeout = 10 * time.Second

// lookup reads the front server's extension-apiserver-authentication
// ConfigMap, as k8s.io/apiserver's delegated authentication does, unless
// --authentication-skip-lookup or both CAs are given by flags. A missing
// ConfigMap, or missing keys, are logged: the server starts without them
// (the ConfigMap is watched, and what appears later is used). A front
// server that cannot be asked, or refuses, stops the start unless
// --authentication-tolerate-lookup-failure.
func (o *AuthenticationOptions) lookup(log *slog.Logger) error {
	o.Delegation, o.delegationRV = nil, ""
	if o.RemoteKubeconfigFile == "" || o.SkipInClusterLookup || (o.ClientCAFile != "" && o.RequestHeader.ClientCAFile != "") {
		return nil
	}
	src, err := delegation.New(o.remote, log)
	if err != nil {
		return fmt.Errorf("--authentication-kubeconfig: %w", err)
	}
	o.Delegation = src
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	rv, err := src.Fetch(ctx)
	where := "configmap/" + delegation.Name + " in " + delegation.Namespace
	switch {
	case errors.Is(err, delegation.ErrNotFound):
		var missing []string
		if o.ClientCAFile == "" {
			missing = append(missing, "client-ca-file")
		}
		if o.RequestHeader.ClientCAFile == "" {
			missing = append(missing, "requestheader-client-ca-file")
		}
		log.Warn("Cluster doesn't provide " + where + ": no " + strings.Join(missing, " nor ") +
			" from the cluster until it does (it is watched); running on")
		return nil
	case err != nil && o.TolerateInClusterLookupFailure:
		log.Warn("Error looking up in-cluster authentication configuration; continuing (--authentication-tolerate-lookup-failure) and reading it again in the background", "err", err)
		return nil
	case errors.Is(err, delegation.ErrForbidden):
		return fmt.Errorf("unable to get %s: %w. Usually fixed by 'kubectl create rolebinding -n kube-system ROLEBINDING_NAME --role=extension-apiserver-authentication-reader --serviceaccount=YOUR_NS:YOUR_SA'", where, err)
	case err != nil:
		return fmt.Errorf("unable to load configmap based request-header-client-ca-file: %w", err)
	}
	o.delegationRV = rv
	info, _ := src.Info()
	if o.ClientCAFile == "" && len(info.ClientCA) == 0 {
		log.Warn("Cluster doesn't provide client-ca-file in " + where + ", so client certificate authentication won't work.")
	}
	if o.RequestHeader.ClientCAFile == "" && len(info.RequestHeaderCA) == 0 {
		log.Warn("Cluster doesn't provide requestheader-client-ca-file in " + where + ", so request-header client certificate authentication won't work.")
	}
	return nil
}

func (o *AuthenticationOptions) anonymousConfig() *oidc.AnonymousConfig {
	if o.Config == nil {
		return nil
	}
	return o.Config.Anonymous
}

// anonymousPaths allows anonymous requests to the paths of the
// conditions; without conditions, to every path.
func anonymousPaths(conds []oidc.AnonymousCondition) func(*http.Request) bool {
	if len(conds) == 0 {
		return nil
	}
	paths := map[string]bool{}
	for _, c := range conds {
		paths[c.Path] = true
	}
	return func(r *http.Request) bool { return paths[r.URL.Path] }
}

// ApplyTo sets the server's authenticator (and, for servers built without
// it, the client CA).
func (o *AuthenticationOptions) ApplyTo(c *server.Config) error {
	if o.Authenticator == nil {
		return errors.New("authentication: ApplyTo before Complete")
	}
	if o.ClientCA != nil {
		c.SecureServing.ClientCA = o.ClientCA
	}
	c.Authenticator = o.Authenticator
	return nil
}

// InstallSystemAPIs serves authentication.k8s.io/v1: SelfSubjectReview
// (kubectl auth whoami) and TokenReview (this server as another's token
// webhook), answered with TokenAuthenticator for the API audiences. A
// delegated server also gets the post-start hook
// delegated-authentication-configmap, which watches the front server's
// ConfigMap until the server stops.
func (o *AuthenticationOptions) InstallSystemAPIs(s *server.GenericServer) error {
	if err := system.InstallAuthentication(s, o.TokenAuthenticator, o.APIAudiences); err != nil {
		return err
	}
	if src, rv := o.Delegation, o.delegationRV; src != nil {
		// Keep the front server's ConfigMap current until the server stops.
		return s.AddPostStartHook("delegated-authentication-configmap", func(ctx context.Context) error {
			go src.Run(ctx, rv)
			return nil
		})
	}
	return nil
}

// describe lists the authenticators configured, for the log.
func (o *AuthenticationOptions) describe(sa *ServiceAccountOptions) string {
	var parts []string
	if o.requestHeaderCA != nil {
		parts = append(parts, "request headers")
	}
	if o.ClientCA != nil {
		parts = append(parts, "client certificates")
	}
	if o.tokenFile != nil {
		parts = append(parts, "token file")
	}
	if sa != nil && len(sa.PublicKeys) > 0 && len(sa.Issuers) > 0 {
		parts = append(parts, "service account tokens")
	}
	for _, a := range o.jwtIssuers {
		parts = append(parts, "JWT issuer "+a.IssuerURL())
	}
	if o.WebhookConfigFile != "" {
		parts = append(parts, "token webhook")
	}
	if o.RemoteKubeconfigFile != "" {
		parts = append(parts, "delegated to "+o.remote.Server)
	}
	if o.Delegation != nil {
		parts = append(parts, "front server's "+delegation.Namespace+"/"+delegation.Name)
	}
	if o.Anonymous || (o.anonymousConfig() != nil && o.anonymousConfig().Enabled) {
		parts = append(parts, "anonymous")
	}
	return strings.Join(parts, ", ")
}
