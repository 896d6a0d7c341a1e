package encryption

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Configuration is apiserver.config.k8s.io/v1 EncryptionConfiguration.
type Configuration struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Resources  []ResourceConfig `json:"resources"`
}

// ResourceConfig names resources ("secrets", "deployments.apps", "*.apps",
// "*.*") and the providers their values are written and read with.
type ResourceConfig struct {
	Resources []string         `json:"resources"`
	Providers []ProviderConfig `json:"providers"`
}

// ProviderConfig is one provider; exactly one field is set.
type ProviderConfig struct {
	AESGCM    *KeysConfig `json:"aesgcm,omitempty"`
	AESCBC    *KeysConfig `json:"aescbc,omitempty"`
	Secretbox *KeysConfig `json:"secretbox,omitempty"`
	Identity  *struct{}   `json:"identity,omitempty"`
	KMS       any         `json:"kms,omitempty"`
}

// KeysConfig lists a provider's keys; the first encrypts.
type KeysConfig struct {
	Keys []Key `json:"keys"`
}

// Key is a named secret, base64-encoded in the file.
type Key struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// Parse reads an EncryptionConfiguration (YAML or JSON) and checks it as
// kube-apiserver does: the apiVersion and kind, at least one resource and
// one provider per entry, one kind of provider per entry of providers,
// keys with names and secrets of a length their cipher takes.
func Parse(data []byte) (*Configuration, error) {
	var c Configuration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("error decoding encryption provider configuration file: %w", err)
	}
	if c.Kind != "EncryptionConfiguration" {
		return nil, fmt.Errorf("got unexpected config type: %q, expected EncryptionConfiguration", c.Kind)
	}
	if c.APIVersion != "apiserver.config.k8s.io/v1" {
		return nil, fmt.Errorf("got unexpected apiVersion: %q, expected apiserver.config.k8s.io/v1", c.APIVersion)
	}
	var errs []error
	if len(c.Resources) == 0 {
		errs = append(errs, errors.New("resources: Required value: EncryptionConfiguration.Resources must contain at least one resource"))
	}
	for i, r := range c.Resources {
		p := fmt.Sprintf("resources[%d]", i)
		if len(r.Resources) == 0 {
			errs = append(errs, fmt.Errorf("%s.resources: Required value: resources must contain at least one resource", p))
		}
		for j, name := range r.Resources {
			if name == "" || strings.ToLower(name) != name {
				errs = append(errs, fmt.Errorf("%s.resources[%d]: Invalid value: %q: resource name must be lower case", p, j, name))
			}
		}
		if len(r.Providers) == 0 {
			errs = append(errs, fmt.Errorf("%s.providers: Required value: providers must contain at least one provider", p))
		}
		for j, pc := range r.Providers {
			if err := pc.check(); err != nil {
				errs = append(errs, fmt.Errorf("%s.providers[%d]: %w", p, j, err))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &c, nil
}

// check validates one provider entry.
func (pc ProviderConfig) check() error {
	n := 0
	for _, set := range []bool{pc.AESGCM != nil, pc.AESCBC != nil, pc.Secretbox != nil, pc.Identity != nil, pc.KMS != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return errors.New("Invalid value: more than one provider specified in a single element, should split into different list elements")
	case pc.KMS != nil:
		return errors.New("Unsupported value: \"kms\": this server supports aescbc, aesgcm, secretbox and identity")
	case pc.AESGCM != nil:
		return pc.AESGCM.check("aesgcm", []int{16, 24, 32})
	case pc.AESCBC != nil:
		return pc.AESCBC.check("aescbc", []int{16, 24, 32})
	case pc.Secretbox != nil:
		return pc.Secretbox.check("secretbox", []int{32})
	}
	return nil
}

// check validates a provider's keys: names unique and without ":", secrets
// base64 of one of the lengths the cipher takes.
func (k *KeysConfig) check(provider string, lengths []int) error {
	if len(k.Keys) == 0 {
		return fmt.Errorf("%s.keys: Required value: keys list must contain at least one key", provider)
	}
	seen := map[string]bool{}
	for i, key := range k.Keys {
		p := fmt.Sprintf("%s.keys[%d]", provider, i)
		switch {
		case key.Name == "":
			return fmt.Errorf("%s.name: Required value: key name is required", p)
		case strings.Contains(key.Name, ":"):
			return fmt.Errorf("%s.name: Invalid value: %q: key name must not contain \":\"", p, key.Name)
		case seen[key.Name]:
			return fmt.Errorf("%s.name: Duplicate value: %q", p, key.Name)
		case key.Secret == "":
			return fmt.Errorf("%s.secret: Required value: secret is required", p)
		}
		seen[key.Name] = true
		raw, err := base64.StdEncoding.DecodeString(key.Secret)
		if err != nil {
			return fmt.Errorf("%s.secret: Invalid value: \"REDACTED\": secrets must be base64 encoded", p)
		}
		ok := false
		for _, l := range lengths {
			ok = ok || len(raw) == l
		}
		if !ok {
			return fmt.Errorf("%s.secret: Invalid value: \"REDACTED\": secret is not of the expected length, got %d, expected one of %v", p, len(raw), lengths)
		}
	}
	return nil
}
