package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// kubeconfigFile is the part of the kubeconfig format ReadKubeconfig reads.
type kubeconfigFile struct {
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData []byte `json:"certificate-authority-data"`
			TLSServerName            string `json:"tls-server-name"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string         `json:"name"`
		User kubeconfigUser `json:"user"`
	} `json:"users"`
	Contexts []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	CurrentContext string `json:"current-context"`
}

// kubeconfigUser is a kubeconfig's user entry.
type kubeconfigUser struct {
	ClientCertificate     string `json:"client-certificate"`
	ClientCertificateData []byte `json:"client-certificate-data"`
	ClientKey             string `json:"client-key"`
	ClientKeyData         []byte `json:"client-key-data"`
	Token                 string `json:"token"`
	TokenFile             string `json:"tokenFile"`
}

// ReadKubeconfigUsers reads every user of a kubeconfig file by name (their
// client certificate, token or tokenFile; files relative to the
// kubeconfig's directory), ignoring clusters and contexts. It reads
// kube-apiserver's admission webhook kubeconfig, whose users are named
// after the webhook hosts they authenticate to.
func ReadKubeconfigUsers(path string) (map[string]Kubeconfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	var f kubeconfigFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	users := make(map[string]Kubeconfig, len(f.Users))
	for _, u := range f.Users {
		var k Kubeconfig
		if err := u.User.read(filepath.Dir(path), &k); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: user %q: %w", path, u.Name, err)
		}
		users[u.Name] = k
	}
	return users, nil
}

// read fills k's credentials from the user entry.
func (usr *kubeconfigUser) read(dir string, k *Kubeconfig) error {
	read := func(name string) ([]byte, error) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return os.ReadFile(name)
	}
	k.Client.CertPEM, k.Client.KeyPEM, k.Token = usr.ClientCertificateData, usr.ClientKeyData, usr.Token
	for _, ref := range []struct {
		file string
		dst  *[]byte
	}{{usr.ClientCertificate, &k.Client.CertPEM}, {usr.ClientKey, &k.Client.KeyPEM}} {
		if ref.file == "" {
			continue
		}
		b, err := read(ref.file)
		if err != nil {
			return err
		}
		*ref.dst = b
	}
	if usr.TokenFile != "" && k.Token == "" {
		b, err := read(usr.TokenFile)
		if err != nil {
			return err
		}
		k.Token = strings.TrimSpace(string(b))
		k.TokenFile = usr.TokenFile
		if !filepath.IsAbs(k.TokenFile) {
			k.TokenFile = filepath.Join(dir, k.TokenFile)
		}
	}
	return nil
}

// ReadKubeconfig reads the current context of a kubeconfig file (its only
// context when none is current): the cluster's server, CA and TLS server
// name, and the user's client certificate or token. Files it names
// (certificate-authority, client-certificate, client-key, tokenFile) are
// read relative to the kubeconfig's directory. It is how the webhook
// authorizer (--authorization-webhook-config-file) finds its server.
// insecure-skip-tls-verify is refused: a webhook decides who may do what,
// and must be the server it claims to be.
func ReadKubeconfig(path string) (Kubeconfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Kubeconfig{}, fmt.Errorf("reading kubeconfig: %w", err)
	}
	var f kubeconfigFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return Kubeconfig{}, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	k, err := f.current(filepath.Dir(path))
	if err != nil {
		return Kubeconfig{}, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return k, nil
}

func (f *kubeconfigFile) current(dir string) (Kubeconfig, error) {
	ctxName := f.CurrentContext
	if ctxName == "" {
		if len(f.Contexts) != 1 {
			return Kubeconfig{}, errors.New("no current-context")
		}
		ctxName = f.Contexts[0].Name
	}
	var clusterName, userName string
	found := false
	for _, c := range f.Contexts {
		if c.Name == ctxName {
			clusterName, userName, found = c.Context.Cluster, c.Context.User, true
			break
		}
	}
	if !found {
		return Kubeconfig{}, fmt.Errorf("context %q not found", ctxName)
	}
	read := func(name string) ([]byte, error) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return os.ReadFile(name)
	}
	k := Kubeconfig{Name: ctxName}
	found = false
	for _, c := range f.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		cl := c.Cluster
		if cl.InsecureSkipTLSVerify {
			return Kubeconfig{}, fmt.Errorf("cluster %q: insecure-skip-tls-verify is not supported", clusterName)
		}
		k.Server, k.TLSServerName, k.CAPEM = cl.Server, cl.TLSServerName, cl.CertificateAuthorityData
		if cl.CertificateAuthority != "" {
			b, err := read(cl.CertificateAuthority)
			if err != nil {
				return Kubeconfig{}, fmt.Errorf("cluster %q: %w", clusterName, err)
			}
			k.CAPEM = b
		}
	}
	if !found {
		return Kubeconfig{}, fmt.Errorf("cluster %q not found", clusterName)
	}
	if k.Server == "" {
		return Kubeconfig{}, fmt.Errorf("cluster %q has no server", clusterName)
	}
	if userName == "" {
		return k, nil
	}
	found = false
	for _, u := range f.Users {
		if u.Name != userName {
			continue
		}
		found = true
		if err := u.User.read(dir, &k); err != nil {
			return Kubeconfig{}, fmt.Errorf("user %q: %w", userName, err)
		}
	}
	if !found {
		return Kubeconfig{}, fmt.Errorf("user %q not found", userName)
	}
	return k, nil
}

// ClientTLSConfig is the TLS configuration of a client of k.Server: k's CA
// (the system's roots when it has none), its TLS server name and its
// client certificate, if any.
func (k Kubeconfig) ClientTLSConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: k.TLSServerName}
	if len(k.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(k.CAPEM) {
			return nil, errors.New("kubeconfig: no PEM certificates in the certificate authority")
		}
		c.RootCAs = pool
	}
	if len(k.Client.CertPEM) > 0 || len(k.Client.KeyPEM) > 0 {
		cert, err := tls.X509KeyPair(k.Client.CertPEM, k.Client.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
