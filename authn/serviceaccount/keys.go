package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
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
