package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/apikit-dev/apikit/authn"
)

// UsernamePrefix starts the user name of every service account.
const UsernamePrefix = authn.ServiceAccountUsernamePrefix

// Username returns the user name a service account authenticates as:
// system:serviceaccount:<namespace>:<name>.
func Username(namespace, name string) string {
	return UsernamePrefix + namespace + ":" + name
}

// Ref names an object a token is about: the service account, or the pod,
// secret or node it is bound to.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// PrivateClaims are the claims Kubernetes adds to the registered ones,
// under the key "kubernetes.io".
type PrivateClaims struct {
	Kubernetes KubernetesClaims `json:"kubernetes.io,omitempty"`
}

// KubernetesClaims name the service account a token belongs to and what it
// is bound to.
type KubernetesClaims struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount Ref    `json:"serviceaccount,omitempty"`
	Pod            *Ref   `json:"pod,omitempty"`
	Secret         *Ref   `json:"secret,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
	// WarnAfter is when a client still using an extended token (see
	// --service-account-extend-token-expiration) is reported.
	WarnAfter *jwt.NumericDate `json:"warnafter,omitempty"`
}

// NewClaims returns the claims of a token for the service account sa in
// namespace, for audiences, valid for expiration from now, as
// kube-apiserver's TokenRequest makes them: subject
// system:serviceaccount:<namespace>:<name>, a unique ID, issued-at and
// not-before now. The Generator sets the issuer.
func NewClaims(namespace string, sa Ref, audiences []string, expiration time.Duration, now time.Time) (*jwt.Claims, *PrivateClaims) {
	return &jwt.Claims{
			ID:        uuid.NewString(),
			Subject:   Username(namespace, sa.Name),
			Audience:  jwt.Audience(audiences),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			Expiry:    jwt.NewNumericDate(now.Add(expiration)),
		}, &PrivateClaims{Kubernetes: KubernetesClaims{
			Namespace:      namespace,
			ServiceAccount: sa,
		}}
}

// UserClaims are the private claim of a user token: a token that names a
// user (the subject) and the user's groups rather than a service account.
// Tokens of `<server> token --user alice --group dev` are such tokens.
type UserClaims struct {
	User *UserInfo `json:"apikit.dev/user,omitempty"`
}

// UserInfo is who a user token authenticates, beyond its subject.
type UserInfo struct {
	UID    string   `json:"uid,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// NewUserClaims returns the claims of a token for user name, with uid and
// groups, for audiences, valid for expiration from now: a unique ID,
// issued-at and not-before now. Authenticator maps it back to that user;
// the name may not be a service account's.
func NewUserClaims(name, uid string, groups, audiences []string, expiration time.Duration, now time.Time) (*jwt.Claims, *UserClaims) {
	return &jwt.Claims{
		ID:        uuid.NewString(),
		Subject:   name,
		Audience:  jwt.Audience(audiences),
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(expiration)),
	}, &UserClaims{User: &UserInfo{UID: uid, Groups: groups}}
}

// Generator signs service-account tokens for one issuer with one key.
type Generator struct {
	issuer string
	signer jose.Signer
	keyID  string
}

// NewGenerator returns a Generator signing as issuer with key: RS256 for an
// RSA key, ES256, ES384 or ES512 for an ECDSA key on P-256, P-384 or P-521.
// Tokens carry the key ID kube-apiserver derives from the public key (the
// unpadded base64url SHA-256 of its PKIX encoding), so that verifiers can
// pick the key among several.
func NewGenerator(issuer string, key crypto.Signer) (*Generator, error) {
	if issuer == "" {
		return nil, errors.New("serviceaccount: a token generator needs an issuer")
	}
	alg, err := algorithm(key)
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Algorithm: string(alg), Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: making a %s signer: %w", alg, err)
	}
	return &Generator{issuer: issuer, signer: signer, keyID: kid}, nil
}

// Issuer returns the issuer the Generator signs as.
func (g *Generator) Issuer() string { return g.issuer }

// KeyID returns the ID of the signing key, the kid header of its tokens.
func (g *Generator) KeyID() string { return g.keyID }

// GenerateToken signs claims (with the Generator's issuer) and private,
// which may be nil, into a compact JWT.
func (g *Generator) GenerateToken(claims *jwt.Claims, private *PrivateClaims) (string, error) {
	if private == nil {
		return g.sign(claims, nil)
	}
	return g.sign(claims, private)
}

// GenerateUserToken signs the claims of a user token (NewUserClaims) into
// a compact JWT that Authenticator accepts as that user.
func (g *Generator) GenerateUserToken(claims *jwt.Claims, user *UserClaims) (string, error) {
	if user == nil || user.User == nil {
		return "", errors.New("serviceaccount: a user token needs user claims")
	}
	return g.sign(claims, user)
}

func (g *Generator) sign(claims *jwt.Claims, private any) (string, error) {
	c := *claims
	c.Issuer = g.issuer
	b := jwt.Signed(g.signer).Claims(&c)
	if private != nil {
		b = b.Claims(private)
	}
	token, err := b.Serialize()
	if err != nil {
		return "", fmt.Errorf("serviceaccount: signing token: %w", err)
	}
	return token, nil
}

// KeyID returns kube-apiserver's ID for a public key: the unpadded
// base64url SHA-256 of its PKIX encoding.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("serviceaccount: encoding public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func algorithm(key crypto.Signer) (jose.SignatureAlgorithm, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return jose.RS256, nil
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
		return "", fmt.Errorf("serviceaccount: unsupported ECDSA curve %s", k.Curve.Params().Name)
	}
	return "", fmt.Errorf("serviceaccount: unsupported key type %T; use an RSA or ECDSA key", key)
}
