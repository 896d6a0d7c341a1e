package oidc

import (
	"errors"
	"fmt"
	"net/url"
	"slices"

	"sigs.k8s.io/yaml"
)

// Versions of the AuthenticationConfiguration file that ParseConfig reads.
var configAPIVersions = []string{
	"apiserver.config.k8s.io/v1",
	"apiserver.config.k8s.io/v1beta1",
	"apiserver.config.k8s.io/v1alpha1",
}

// AuthenticationConfiguration is kube-apiserver's structured authentication
// configuration (--authentication-config, kind AuthenticationConfiguration
// of apiserver.config.k8s.io), the part apikit implements: JWT issuers
// mapped by claims, and anonymous access. CEL expressions
// (claimMappings.*.expression, claimValidationRules[].expression,
// userValidationRules, extra) need a CEL engine apikit does not carry; a
// file using them is refused rather than half-applied.
type AuthenticationConfiguration struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	JWT        []JWTAuthenticator `json:"jwt,omitempty"`
	Anonymous  *AnonymousConfig   `json:"anonymous,omitempty"`
}

// JWTAuthenticator configures one issuer.
type JWTAuthenticator struct {
	Issuer               IssuerConfig          `json:"issuer"`
	ClaimValidationRules []ClaimValidationRule `json:"claimValidationRules,omitempty"`
	ClaimMappings        ClaimMappings         `json:"claimMappings"`
	UserValidationRules  []map[string]any      `json:"userValidationRules,omitempty"`
}

// IssuerConfig says who the issuer is and how to reach it.
type IssuerConfig struct {
	URL                  string   `json:"url"`
	DiscoveryURL         string   `json:"discoveryURL,omitempty"`
	CertificateAuthority string   `json:"certificateAuthority,omitempty"`
	Audiences            []string `json:"audiences"`
	AudienceMatchPolicy  string   `json:"audienceMatchPolicy,omitempty"`
	EgressSelectorType   string   `json:"egressSelectorType,omitempty"`
}

// ClaimValidationRule requires a claim to have a value.
type ClaimValidationRule struct {
	Claim         string `json:"claim,omitempty"`
	RequiredValue string `json:"requiredValue,omitempty"`
	Expression    string `json:"expression,omitempty"`
	Message       string `json:"message,omitempty"`
}

// ClaimMappings map claims to the user's attributes.
type ClaimMappings struct {
	Username PrefixedClaimOrExpression `json:"username"`
	Groups   PrefixedClaimOrExpression `json:"groups,omitempty"`
	UID      ClaimOrExpression         `json:"uid,omitempty"`
	Extra    []map[string]any          `json:"extra,omitempty"`
}

// PrefixedClaimOrExpression is a claim with a prefix. The prefix must be
// given whenever the claim is (it may be ""), so that nobody gets an
// unprefixed name by accident.
type PrefixedClaimOrExpression struct {
	Claim      string  `json:"claim,omitempty"`
	Prefix     *string `json:"prefix,omitempty"`
	Expression string  `json:"expression,omitempty"`
}

// ClaimOrExpression is a claim.
type ClaimOrExpression struct {
	Claim      string `json:"claim,omitempty"`
	Expression string `json:"expression,omitempty"`
}

// AnonymousConfig turns anonymous access on, for some paths only when
// Conditions are given.
type AnonymousConfig struct {
	Enabled    bool                 `json:"enabled"`
	Conditions []AnonymousCondition `json:"conditions,omitempty"`
}

// AnonymousCondition allows anonymous requests to one path.
type AnonymousCondition struct {
	Path string `json:"path"`
}

// ParseConfig reads and checks an AuthenticationConfiguration (YAML or
// JSON); unknown fields are errors. Every problem found is reported.
func ParseConfig(data []byte) (*AuthenticationConfiguration, error) {
	var c AuthenticationConfiguration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("parsing authentication configuration: %w", err)
	}
	var errs []error
	if c.Kind != "AuthenticationConfiguration" || !slices.Contains(configAPIVersions, c.APIVersion) {
		errs = append(errs, fmt.Errorf("apiVersion %q, kind %q: want kind AuthenticationConfiguration of %v", c.APIVersion, c.Kind, configAPIVersions))
	}
	seen := map[string]bool{}
	for i, j := range c.JWT {
		errs = append(errs, j.validate(fmt.Sprintf("jwt[%d]", i), seen)...)
	}
	if a := c.Anonymous; a != nil {
		if !a.Enabled && len(a.Conditions) > 0 {
			errs = append(errs, errors.New("anonymous.conditions: Invalid value: enabled should be set to true when conditions are defined"))
		}
		paths := map[string]bool{}
		for i, cond := range a.Conditions {
			if cond.Path == "" || cond.Path[0] != '/' {
				errs = append(errs, fmt.Errorf("anonymous.conditions[%d].path: must be an absolute path", i))
			}
			if paths[cond.Path] {
				errs = append(errs, fmt.Errorf("anonymous.conditions[%d].path: Duplicate value: %q", i, cond.Path))
			}
			paths[cond.Path] = true
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &c, nil
}

func (j JWTAuthenticator) validate(at string, seen map[string]bool) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", at, field, fmt.Sprintf(format, args...)))
	}
	unsupported := func(field string) { bad(field, "CEL expressions are not supported by apikit") }
	iss := j.Issuer
	if u, err := url.Parse(iss.URL); iss.URL == "" || err != nil || u.Scheme != "https" || u.Host == "" {
		bad("issuer.url", "Invalid value: %q: must be an https URL", iss.URL)
	} else if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		bad("issuer.url", "Invalid value: %q: must not contain a user, query or fragment", iss.URL)
	}
	if seen[iss.URL] {
		bad("issuer.url", "Duplicate value: %q", iss.URL)
	}
	seen[iss.URL] = true
	if iss.DiscoveryURL != "" {
		if u, err := url.Parse(iss.DiscoveryURL); err != nil || u.Scheme != "https" || u.Host == "" {
			bad("issuer.discoveryURL", "Invalid value: %q: must be an https URL", iss.DiscoveryURL)
		} else if iss.DiscoveryURL == iss.URL {
			bad("issuer.discoveryURL", "Invalid value: %q: discoveryURL must be different from URL", iss.DiscoveryURL)
		}
	}
	if len(iss.Audiences) == 0 {
		bad("issuer.audiences", "Required value: at least one issuer.audiences is required")
	}
	auds := map[string]bool{}
	for _, a := range iss.Audiences {
		if a == "" {
			bad("issuer.audiences", "Required value: audience can't be empty")
		}
		if auds[a] {
			bad("issuer.audiences", "Duplicate value: %q", a)
		}
		auds[a] = true
	}
	switch {
	case len(iss.Audiences) > 1 && iss.AudienceMatchPolicy != "MatchAny":
		bad("issuer.audienceMatchPolicy", "Invalid value: %q: audienceMatchPolicy must be MatchAny for multiple audiences", iss.AudienceMatchPolicy)
	case iss.AudienceMatchPolicy != "" && iss.AudienceMatchPolicy != "MatchAny":
		bad("issuer.audienceMatchPolicy", "Invalid value: %q: audienceMatchPolicy must be empty or MatchAny", iss.AudienceMatchPolicy)
	}
	if iss.EgressSelectorType != "" {
		bad("issuer.egressSelectorType", "egress selectors are not supported by apikit")
	}
	for i, r := range j.ClaimValidationRules {
		switch {
		case r.Expression != "":
			unsupported(fmt.Sprintf("claimValidationRules[%d].expression", i))
		case r.Claim == "":
			bad(fmt.Sprintf("claimValidationRules[%d].claim", i), "Required value: claim or expression is required")
		}
	}
	if len(j.UserValidationRules) > 0 {
		unsupported("userValidationRules")
	}
	m := j.ClaimMappings
	switch {
	case m.Username.Expression != "":
		unsupported("claimMappings.username.expression")
	case m.Username.Claim == "":
		bad("claimMappings.username", "Required value: claim or expression is required")
	case m.Username.Prefix == nil:
		bad("claimMappings.username.prefix", "Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing")
	}
	switch {
	case m.Groups.Expression != "":
		unsupported("claimMappings.groups.expression")
	case m.Groups.Claim != "" && m.Groups.Prefix == nil:
		bad("claimMappings.groups.prefix", "Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing")
	case m.Groups.Claim == "" && m.Groups.Prefix != nil:
		bad("claimMappings.groups.prefix", "Invalid value: prefix can't be set when claim is not set")
	}
	if m.UID.Expression != "" {
		unsupported("claimMappings.uid.expression")
	}
	if len(m.Extra) > 0 {
		unsupported("claimMappings.extra")
	}
	return errs
}

// Config converts the entry to the authenticator's configuration.
func (j JWTAuthenticator) Config() Issuer {
	iss := Issuer{
		URL:            j.Issuer.URL,
		DiscoveryURL:   j.Issuer.DiscoveryURL,
		CAPEM:          []byte(j.Issuer.CertificateAuthority),
		Audiences:      j.Issuer.Audiences,
		UsernameClaim:  j.ClaimMappings.Username.Claim,
		GroupsClaim:    j.ClaimMappings.Groups.Claim,
		UIDClaim:       j.ClaimMappings.UID.Claim,
		RequiredClaims: map[string]string{},
		// The structured configuration accepts every asymmetric algorithm.
		SigningAlgorithms: []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"},
	}
	if p := j.ClaimMappings.Username.Prefix; p != nil {
		iss.UsernamePrefix = *p
	}
	if p := j.ClaimMappings.Groups.Prefix; p != nil {
		iss.GroupsPrefix = *p
	}
	for _, r := range j.ClaimValidationRules {
		iss.RequiredClaims[r.Claim] = r.RequiredValue
	}
	return iss
}
