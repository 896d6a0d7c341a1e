package serviceaccount

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/apikit-dev/apikit/authn"
)

// Groups every service account is in, and the prefix of its namespace's.
const (
	AllServiceAccountsGroup  = authn.AllServiceAccountsGroup
	NamespaceGroupPrefix     = authn.ServiceAccountGroupPrefix
	podNameKey               = "authentication.kubernetes.io/pod-name"
	podUIDKey                = "authentication.kubernetes.io/pod-uid"
	nodeNameKey              = "authentication.kubernetes.io/node-name"
	nodeUIDKey               = "authentication.kubernetes.io/node-uid"
	credentialIDPrefixForJWT = "JTI="
)

// ClockSkew is how far a token's exp, nbf and iat may be off before it is
// refused: go-jose's default leeway, which kube-apiserver uses too.
const ClockSkew = jwt.DefaultLeeway

// signatureAlgorithms are the algorithms a token may be signed with; any
// other (none, HMAC) is refused before a key is looked at.
var signatureAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512,
}

// Authenticator verifies tokens signed with a service-account signing key:
// service-account tokens (subject system:serviceaccount:<ns>:<name>, with
// the "kubernetes.io" claims) and user tokens (NewUserClaims, with the
// "apikit.dev/user" claim), as minted by a Generator.
//
// A token is this authenticator's business when it is a JWT signed with
// an allowed algorithm whose issuer is one of the accepted ones; anything
// else is left to other authenticators (ok=false). Such a token is then
// refused (an error) unless a key verifies its signature, it has not
// expired and is already valid (with ClockSkew), and its audiences meet
// the ones asked for: those in the context (authn.WithAudiences, set by a
// TokenReview), else the server's implicit audiences (--api-audiences).
//
// With a Lookup (SetLookup, given by a server that stores service accounts)
// it refuses a token whose service account no longer exists, was recreated
// or is being deleted; the pods, secrets and nodes a token may be bound to
// are not checked. Tokens must carry an expiry.
type Authenticator struct {
	issuers  []string
	keys     []verificationKey
	implicit authn.Audiences
	lookup   lookupHolder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

type verificationKey struct {
	id  string
	key crypto.PublicKey
}

// NewAuthenticator returns an Authenticator accepting tokens of issuers
// verified by keys (RSA or ECDSA public keys), for implicitAudiences when
// the context names none. An empty implicitAudiences skips the audience
// check for such tokens, as in kube-apiserver.
func NewAuthenticator(issuers []string, keys []crypto.PublicKey, implicitAudiences []string) (*Authenticator, error) {
	if len(issuers) == 0 {
		return nil, errors.New("serviceaccount: the token authenticator needs at least one issuer")
	}
	if len(keys) == 0 {
		return nil, errors.New("serviceaccount: the token authenticator needs at least one key")
	}
	a := &Authenticator{issuers: slices.Clone(issuers), implicit: slices.Clone(implicitAudiences)}
	for _, k := range keys {
		id, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		a.keys = append(a.keys, verificationKey{id: id, key: k})
	}
	return a, nil
}

// tokenClaims are all the claims a token may carry.
type tokenClaims struct {
	jwt.Claims
	PrivateClaims
	UserClaims
}

// AuthenticateToken implements authn.TokenAuthenticator.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.Response, bool, error) {
	if strings.Count(token, ".") != 2 {
		return nil, false, nil // not a compact JWS
	}
	parsed, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return nil, false, nil
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil || !slices.Contains(a.issuers, unverified.Issuer) {
		return nil, false, nil // another issuer's token, or not a JWT at all
	}

	var claims tokenClaims
	if err := a.verify(parsed, &claims); err != nil {
		return nil, false, err
	}
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	if claims.Expiry == nil {
		return nil, false, errors.New("service account token has no expiry")
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Time: now}, ClockSkew); err != nil {
		return nil, false, fmt.Errorf("service account token: %w", err)
	}
	auds, err := a.audiences(ctx, claims.Audience)
	if err != nil {
		return nil, false, err
	}
	u, err := userFor(&claims)
	if err != nil {
		return nil, false, err
	}
	if err := a.checkAccount(ctx, &claims.Kubernetes); err != nil {
		return nil, false, err
	}
	return &authn.Response{User: u, Audiences: auds}, true, nil
}

// verify checks the signature with the key the token names (kid), or else
// with each key in turn, and decodes the claims.
func (a *Authenticator) verify(parsed *jwt.JSONWebToken, claims *tokenClaims) error {
	kid := parsed.Headers[0].KeyID
	if kid != "" {
		for _, k := range a.keys {
			if k.id == kid {
				if err := parsed.Claims(k.key, claims); err == nil {
					return nil
				}
				break
			}
		}
	}
	for _, k := range a.keys {
		if k.id == kid {
			continue // tried above
		}
		if err := parsed.Claims(k.key, claims); err == nil {
			return nil
		}
	}
	return errors.New("service account token signature is invalid")
}

// audiences returns the audiences the token is valid for among those asked
// for, as kube-apiserver computes them: a token without audiences counts as
// made for the implicit ones.
func (a *Authenticator) audiences(ctx context.Context, tokenAuds jwt.Audience) (authn.Audiences, error) {
	have := authn.Audiences(tokenAuds)
	if len(have) == 0 {
		have = a.implicit
	}
	want, ok := authn.AudiencesFrom(ctx)
	if !ok {
		want = a.implicit
	}
	shared := have.Intersect(want)
	if len(shared) == 0 && len(a.implicit) != 0 {
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(have), []string(want))
	}
	return shared, nil
}

// userFor maps verified claims to the user: a service account, or the
// user of a user token.
func userFor(c *tokenClaims) (authn.User, error) {
	var extra map[string][]string
	if c.ID != "" {
		extra = map[string][]string{authn.CredentialIDKey: {credentialIDPrefixForJWT + c.ID}}
	}
	if k := c.Kubernetes; k.Namespace != "" || k.ServiceAccount.Name != "" {
		if k.Namespace == "" || k.ServiceAccount.Name == "" || c.Subject != Username(k.Namespace, k.ServiceAccount.Name) {
			return authn.User{}, errors.New("service account token's subject does not match its kubernetes.io claims")
		}
		if extra == nil {
			extra = map[string][]string{}
		}
		if k.Pod != nil {
			extra[podNameKey] = []string{k.Pod.Name}
			extra[podUIDKey] = []string{k.Pod.UID}
		}
		if k.Node != nil {
			extra[nodeNameKey] = []string{k.Node.Name}
			extra[nodeUIDKey] = []string{k.Node.UID}
		}
		return authn.User{
			Name:   c.Subject,
			UID:    k.ServiceAccount.UID,
			Groups: []string{AllServiceAccountsGroup, NamespaceGroupPrefix + k.Namespace},
			Extra:  extra,
		}, nil
	}
	if c.User == nil {
		return authn.User{}, errors.New("token carries neither service account nor user claims")
	}
	if c.Subject == "" || strings.HasPrefix(c.Subject, UsernamePrefix) {
		return authn.User{}, errors.New("user token has an invalid subject")
	}
	return authn.User{Name: c.Subject, UID: c.User.UID, Groups: slices.Clone(c.User.Groups), Extra: extra}, nil
}
