package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/nacl/secretbox"
)

// Transformer turns a resource's values into what is stored and back.
// key is the value's full etcd key, which AES-GCM authenticates.
type Transformer interface {
	// ToStorage encrypts value with the first provider's first key.
	ToStorage(key string, value []byte) ([]byte, error)
	// FromStorage decrypts a stored value with the provider and key its
	// prefix names; a value without a known prefix is read as is only when
	// the identity provider is listed.
	FromStorage(key string, stored []byte) ([]byte, error)
}

// encPrefix starts every encrypted value: k8s:enc:<provider>:v1:<key>:.
const encPrefix = "k8s:enc:"

// cipherKey is one named key of one provider.
type cipherKey struct {
	prefix []byte // k8s:enc:<provider>:v1:<name>:
	seal   func(key string, plain []byte) ([]byte, error)
	open   func(key string, sealed []byte) ([]byte, error)
}

// providers is the ordered list of one configuration entry: the first
// writes, all read.
type providers struct {
	keys     []cipherKey // in order; nil entry for identity is kept apart
	identity bool        // identity is listed
	// identityFirst: identity writes (plaintext), the ciphers only read.
	identityFirst bool
}

func newProviders(list []ProviderConfig) (*providers, error) {
	p := &providers{}
	for i, pc := range list {
		var (
			name string
			keys []Key
			mk   func(secret []byte) (seal, open func(string, []byte) ([]byte, error), err error)
		)
		switch {
		case pc.Identity != nil:
			p.identity = true
			if i == 0 {
				p.identityFirst = true
			}
			continue
		case pc.AESCBC != nil:
			name, keys, mk = "aescbc", pc.AESCBC.Keys, newCBC
		case pc.AESGCM != nil:
			name, keys, mk = "aesgcm", pc.AESGCM.Keys, newGCM
		case pc.Secretbox != nil:
			name, keys, mk = "secretbox", pc.Secretbox.Keys, newSecretbox
		default:
			return nil, fmt.Errorf("providers[%d]: no supported provider", i)
		}
		for _, k := range keys {
			secret, err := base64.StdEncoding.DecodeString(k.Secret)
			if err != nil {
				return nil, fmt.Errorf("%s key %q: %w", name, k.Name, err)
			}
			seal, open, err := mk(secret)
			if err != nil {
				return nil, fmt.Errorf("%s key %q: %w", name, k.Name, err)
			}
			p.keys = append(p.keys, cipherKey{prefix: []byte(encPrefix + name + ":v1:" + k.Name + ":"), seal: seal, open: open})
		}
	}
	return p, nil
}

// ToStorage implements Transformer.
func (p *providers) ToStorage(key string, value []byte) ([]byte, error) {
	if p.identityFirst || len(p.keys) == 0 {
		return value, nil
	}
	k := p.keys[0]
	sealed, err := k.seal(key, value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(k.prefix)+len(sealed))
	return append(append(out, k.prefix...), sealed...), nil
}

// FromStorage implements Transformer.
func (p *providers) FromStorage(key string, stored []byte) ([]byte, error) {
	for _, k := range p.keys {
		if rest, ok := bytes.CutPrefix(stored, k.prefix); ok {
			return k.open(key, rest)
		}
	}
	if !p.identity {
		return nil, errors.New("no matching prefix found")
	}
	if bytes.HasPrefix(stored, []byte(encPrefix)) {
		// kube-apiserver's identity provider refuses this too: a key
		// missing from the configuration is not plaintext.
		return nil, errors.New("identity transformer tried to read encrypted data")
	}
	return stored, nil
}

// newCBC is kube's aescbc: a random IV, then the PKCS#7-padded value
// encrypted in CBC mode.
func newCBC(secret []byte) (seal, open func(string, []byte) ([]byte, error), err error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, nil, err
	}
	bs := block.BlockSize()
	seal = func(_ string, plain []byte) ([]byte, error) {
		pad := bs - len(plain)%bs
		out := make([]byte, bs+len(plain)+pad)
		iv := out[:bs]
		if _, err := io.ReadFull(rand.Reader, iv); err != nil {
			return nil, fmt.Errorf("aescbc: reading an IV: %w", err)
		}
		body := out[bs:]
		copy(body, plain)
		for i := len(plain); i < len(body); i++ {
			body[i] = byte(pad)
		}
		cipher.NewCBCEncrypter(block, iv).CryptBlocks(body, body)
		return out, nil
	}
	open = func(_ string, sealed []byte) ([]byte, error) {
		if len(sealed) < 2*bs || len(sealed)%bs != 0 {
			return nil, errors.New("the stored data is not a multiple of the block size")
		}
		out := make([]byte, len(sealed)-bs)
		cipher.NewCBCDecrypter(block, sealed[:bs]).CryptBlocks(out, sealed[bs:])
		pad := int(out[len(out)-1])
		if pad == 0 || pad > bs || pad > len(out) {
			return nil, errors.New("invalid PKCS7 data (empty or not padded)")
		}
		for _, b := range out[len(out)-pad:] {
			if int(b) != pad {
				return nil, errors.New("invalid padding on input")
			}
		}
		return out[:len(out)-pad], nil
	}
	return seal, open, nil
}

// newGCM is kube's aesgcm: a random 12-byte nonce, then the sealed value,
// authenticating the value's etcd key.
func newGCM(secret []byte) (seal, open func(string, []byte) ([]byte, error), err error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, err
	}
	ns := aead.NonceSize()
	seal = func(key string, plain []byte) ([]byte, error) {
		out := make([]byte, ns, ns+len(plain)+aead.Overhead())
		if _, err := io.ReadFull(rand.Reader, out); err != nil {
			return nil, fmt.Errorf("aesgcm: reading a nonce: %w", err)
		}
		return aead.Seal(out, out, plain, []byte(key)), nil
	}
	open = func(key string, sealed []byte) ([]byte, error) {
		if len(sealed) < ns {
			return nil, errors.New("the stored data was shorter than the required size")
		}
		return aead.Open(nil, sealed[:ns], sealed[ns:], []byte(key))
	}
	return seal, open, nil
}

// newSecretbox is kube's secretbox: a random 24-byte nonce, then the value
// sealed with XSalsa20 and Poly1305.
func newSecretbox(secret []byte) (seal, open func(string, []byte) ([]byte, error), err error) {
	if len(secret) != 32 {
		return nil, nil, fmt.Errorf("secretbox keys are 32 bytes, got %d", len(secret))
	}
	var k [32]byte
	copy(k[:], secret)
	seal = func(_ string, plain []byte) ([]byte, error) {
		var nonce [24]byte
		if _, err := io.ReadFull(rand.Reader, nonce[:]); err != nil {
			return nil, fmt.Errorf("secretbox: reading a nonce: %w", err)
		}
		return secretbox.Seal(nonce[:], plain, &nonce, &k), nil
	}
	open = func(_ string, sealed []byte) ([]byte, error) {
		if len(sealed) < 24 {
			return nil, errors.New("the stored data was shorter than the required size")
		}
		var nonce [24]byte
		copy(nonce[:], sealed)
		out, ok := secretbox.Open(nil, sealed[24:], &nonce, &k)
		if !ok {
			return nil, errors.New("output array was not large enough for encryption")
		}
		return out, nil
	}
	return seal, open, nil
}
