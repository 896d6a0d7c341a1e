package encryption_test

import (
	"crypto/aes"
	"crypto/cipher"
	"testing"
)

// kubeCBC encrypts plain as kube-apiserver's aescbc does, with a zero IV:
// PKCS#7 padding, then AES-CBC.
func kubeCBC(t *testing.T, key, plain []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	buf := append(append([]byte(nil), plain...), make([]byte, pad)...)
	for i := len(plain); i < len(buf); i++ {
		buf[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(block, make([]byte, aes.BlockSize)).CryptBlocks(buf, buf)
	return buf
}
