package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/apikit-dev/apikit/certs"
)

// ParsePrivateKeyPEM returns the first RSA or ECDSA private key in data:
// PKCS #1 ("RSA PRIVATE KEY"), SEC 1 ("EC PRIVATE KEY") or PKCS #8
// ("PRIVATE KEY") blocks; other blocks (EC PARAMETERS, certificates) are
// skipped.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("data does not contain a valid RSA or ECDSA private key")
		}
		if key, ok := parsePrivateKey(block.Bytes); ok {
			return key, nil
		}
	}
}

// ParsePublicKeysPEM returns every RSA and ECDSA public key in data: PKIX
// ("PUBLIC KEY") and PKCS #1 ("RSA PUBLIC KEY") blocks, the keys of
// certificates, and the public halves of private keys, so that the signing
// key file also serves as a verification key file. Other blocks are
// skipped; data without any key is an error.
func ParsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if key, ok := parsePrivateKey(block.Bytes); ok {
			keys = append(keys, key.Public())
			continue
		}
		if key, ok := parsePublicKey(block.Bytes); ok {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("data does not contain any valid RSA or ECDSA public keys")
	}
	return keys, nil
}

// PrivateKeyFromFile reads a private key with ParsePrivateKeyPEM.
func PrivateKeyFromFile(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

// PublicKeysFromFile reads public keys with ParsePublicKeysPEM.
func PublicKeysFromFile(path string) ([]crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys, err := ParsePublicKeysPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

func parsePrivateKey(der []byte) (crypto.Signer, bool) {
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, true
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, true
	}
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		switch k := k.(type) {
		case *rsa.PrivateKey:
			return k, true
		case *ecdsa.PrivateKey:
			return k, true
		}
	}
	return nil, false
}

func parsePublicKey(der []byte) (crypto.PublicKey, bool) {
	if k, err := x509.ParsePKCS1PublicKey(der); err == nil {
		return k, true
	}
	var key any
	if k, err := x509.ParsePKIXPublicKey(der); err == nil {
		key = k
	} else if cert, err := x509.ParseCertificate(der); err == nil {
		key = cert.PublicKey
	}
	switch k := key.(type) {
	case *rsa.PublicKey:
		return k, true
	case *ecdsa.PublicKey:
		return k, true
	}
	return nil, false
}

// SigningKeyFile is the name of the signing key a development PKI keeps
// beside its certificates.
const SigningKeyFile = "sa.key"

// LoadOrCreateSigningKey returns the private key at path, or, when there is
// no file there, makes an ECDSA P-256 key and writes it (PKCS #8 PEM, mode
// 0600, atomically) so that the next start, and the token command, find
// the same key.
func LoadOrCreateSigningKey(path string) (crypto.Signer, error) {
	key, err := PrivateKeyFromFile(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: generating a signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: encoding the signing key: %w", err)
	}
	if err := certs.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("serviceaccount: writing the signing key: %w", err)
	}
	return k, nil
}
