// Package encryption encrypts stored values at rest as kube-apiserver's
// --encryption-provider-config does: an EncryptionConfiguration
// (apiserver.config.k8s.io/v1) names, per resource, a list of providers
// (aescbc, aesgcm, secretbox, identity), each with keys. The first provider's
// first key encrypts; every provider and key decrypts. An encrypted value
// starts with kube's prefix k8s:enc:<provider>:v1:<key name>:, followed by
// the same bytes kube-apiserver writes, so values move between the two.
//
// It sits in the storage assembly (storage/backend) between the watch cache
// and the backend: Wrap gives a resource's storage.Interface whose writes are
// encrypted and reads decrypted, so the cache above holds plaintext and every
// backend that stores bytes can be used. A Set of transformers follows its
// file when reloading is on (Watch), as
// --encryption-provider-config-automatic-reload does.
package encryption
