package certs

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// Kubeconfig is a minimal kubeconfig: one cluster, one user, one context.
type Kubeconfig struct {
	// Server is the https URL of the API server.
	Server string
	// CAPEM verifies the server's certificate.
	CAPEM []byte
	// Client is the user's client certificate and key; Token is used instead
	// when set.
	Client Pair
	Token  string
	// TokenFile is where Token was read from (a kubeconfig's tokenFile):
	// BearerToken reads it again, so that a rotated token (a projected
	// service-account token) is used. Marshal does not write it.
	TokenFile string
	// Name names the cluster, user and context; "apikit" by default.
	Name string
	// TLSServerName overrides the host name checked in the server's
	// certificate.
	TLSServerName string
}

// Marshal renders the kubeconfig as YAML, with credentials inline so the
// file works wherever it is copied.
func (k Kubeconfig) Marshal() ([]byte, error) {
	name := k.Name
	if name == "" {
		name = "apikit"
	}
	cluster := map[string]any{"server": k.Server, "certificate-authority-data": k.CAPEM}
	if k.TLSServerName != "" {
		cluster["tls-server-name"] = k.TLSServerName
	}
	user := map[string]any{}
	if k.Token != "" {
		user["token"] = k.Token
	} else {
		user["client-certificate-data"] = k.Client.CertPEM
		user["client-key-data"] = k.Client.KeyPEM
	}
	doc := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"clusters":        []any{map[string]any{"name": name, "cluster": cluster}},
		"users":           []any{map[string]any{"name": name, "user": user}},
		"contexts":        []any{map[string]any{"name": name, "context": map[string]any{"cluster": name, "user": name}}},
		"current-context": name,
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding kubeconfig: %w", err)
	}
	return b, nil
}

// WriteFile writes the kubeconfig with mode 0600: it holds a private key.
func (k Kubeconfig) WriteFile(path string) error {
	b, err := k.Marshal()
	if err != nil {
		return err
	}
	return WriteFile(path, b, 0o600)
}

// BearerToken is the token to present: TokenFile's current content when
// there is one (read at every call, so that a rotated token is used; an
// unreadable or empty file keeps Token), else Token.
func (k Kubeconfig) BearerToken() string {
	if k.TokenFile != "" {
		if b, err := os.ReadFile(k.TokenFile); err == nil {
			if t := strings.TrimSpace(string(b)); t != "" {
				return t
			}
		}
	}
	return k.Token
}
