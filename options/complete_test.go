package options

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/certs"
	"github.com/apikit-dev/apikit/meta"
)

func TestDefaultAdvertiseAddress(t *testing.T) {
	ips := func(s ...string) func() ([]net.IP, error) {
		return func() ([]net.IP, error) {
			var out []net.IP
			for _, x := range s {
				out = append(out, net.ParseIP(x))
			}
			return out, nil
		}
	}
	cases := []struct {
		name      string
		advertise string
		bind      string
		hostIPs   func() ([]net.IP, error)
		want      string
		wantErr   string
	}{
		{name: "given", advertise: "203.0.113.7", bind: "0.0.0.0", want: "203.0.113.7"},
		{name: "specific bind address", bind: "198.51.100.4", want: "198.51.100.4"},
		{name: "loopback bind address", bind: "127.0.0.1", hostIPs: ips("192.0.2.10"), want: "127.0.0.1"},
		{name: "unspecified advertise address", advertise: "0.0.0.0", bind: "198.51.100.4", want: "198.51.100.4"},
		{name: "unspecified bind: first IPv4 interface", bind: "0.0.0.0", hostIPs: ips("fe80::1", "2001:db8::5", "192.0.2.10", "192.0.2.11"), want: "192.0.2.10"},
		{name: "IPv6 unspecified bind", bind: "::", hostIPs: ips("192.0.2.10"), want: "192.0.2.10"},
		{name: "no bind address", hostIPs: ips("192.0.2.10"), want: "192.0.2.10"},
		{name: "only IPv6 interfaces", bind: "0.0.0.0", hostIPs: ips("fe80::1", "2001:db8::5"), want: "2001:db8::5"},
		{name: "no interface", bind: "0.0.0.0", hostIPs: ips(), want: "127.0.0.1"},
		{name: "interfaces unreadable", bind: "0.0.0.0", hostIPs: func() ([]net.IP, error) { return nil, errors.New("no /proc") },
			wantErr: "unable to find suitable network address: no /proc; set --advertise-address or a specific --bind-address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t)
			o.Generic.AdvertiseAddress = net.ParseIP(tc.advertise)
			o.Generic.hostIPs = tc.hostIPs
			err := o.Generic.DefaultAdvertiseAddress(net.ParseIP(tc.bind), o.Logger)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Generic.AdvertiseAddress.String(); got != tc.want {
				t.Errorf("advertise address %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDefaultExternalHost(t *testing.T) {
	cases := []struct {
		name, external, advertise string
		hostname                  func() (string, error)
		want, wantErr, wantLog    string
	}{
		{name: "given", external: "api.example.com", advertise: "192.0.2.10", want: "api.example.com"},
		{name: "advertise address", advertise: "192.0.2.10", want: "192.0.2.10", wantLog: "external host was not specified, using 192.0.2.10"},
		{name: "host name", hostname: func() (string, error) { return "node-1", nil }, want: "node-1", wantLog: "external host was not specified, using node-1"},
		{name: "no host name", hostname: func() (string, error) { return "", errors.New("uname failed") }, wantErr: "error finding host name: uname failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, logs := newTestOptions(t)
			g := o.Generic
			g.ExternalHost, g.AdvertiseAddress, g.hostname = tc.external, net.ParseIP(tc.advertise), tc.hostname
			err := g.DefaultExternalHost(o.Logger)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || g.ExternalHost != tc.want {
				t.Fatalf("external host %q (%v), want %q", g.ExternalHost, err, tc.want)
			}
			if !strings.Contains(logs.String(), tc.wantLog) || (tc.wantLog == "" && strings.Contains(logs.String(), "external host")) {
				t.Errorf("log %q, want %q", logs.String(), tc.wantLog)
			}
		})
	}
}

func TestServiceIPRanges(t *testing.T) {
	cases := []struct {
		ranges, primary, secondary, serviceIP string
	}{
		{"", "10.0.0.0/24", "<nil>", "10.0.0.1"},
		{"10.96.0.0/12", "10.96.0.0/12", "<nil>", "10.96.0.1"},
		{"10.96.0.5/20", "10.96.0.0/20", "<nil>", "10.96.0.1"},
		{"10.96.0.0/20,fd00:1234::/108", "10.96.0.0/20", "fd00:1234::/108", "10.96.0.1"},
		{"fd00::/108,10.0.0.0/24", "fd00::/108", "10.0.0.0/24", "fd00::1"},
		{"10.0.0.0/29", "10.0.0.0/29", "<nil>", "10.0.0.1"},
	}
	for _, tc := range cases {
		o, _ := newTestOptions(t, "--service-cluster-ip-range="+tc.ranges)
		if _, err := o.Complete(); err != nil {
			t.Fatalf("%q: %v", tc.ranges, err)
		}
		r := o.ServiceIPRange
		if r.Primary.String() != tc.primary || r.Secondary.String() != tc.secondary || r.APIServerServiceIP.String() != tc.serviceIP {
			t.Errorf("%q: primary %s secondary %s service IP %s, want %s %s %s", tc.ranges,
				r.Primary.String(), r.Secondary.String(), r.APIServerServiceIP, tc.primary, tc.secondary, tc.serviceIP)
		}
	}
}

func servingLeaf(t *testing.T, c *tls.Certificate) *x509.Certificate {
	t.Helper()
	l, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestSelfSignedServingCertificate(t *testing.T) {
	o, _ := newTestOptions(t, "--bind-address=0.0.0.0", "--service-cluster-ip-range=10.96.0.0/12", "--external-hostname=api.example.com")
	o.SecureServing.AlternateDNS = []string{"wardle.wardle.svc"}
	o.SecureServing.AlternateIPs = []net.IP{net.ParseIP("198.51.100.9")}
	if _, err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	pki := filepath.Join(o.Etcd.DataDir, "pki")
	if o.SecureServing.CertDirectory != pki {
		t.Errorf("cert dir %s, want %s", o.SecureServing.CertDirectory, pki)
	}
	leaf := servingLeaf(t, o.SecureServing.Certificate)
	for _, h := range []string{"192.0.2.10", "10.96.0.1", "localhost", "127.0.0.1", "::1", "api.example.com", "wardle.wardle.svc", "198.51.100.9"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("serving certificate does not cover %s: %v", h, err)
		}
	}
	if leaf.Subject.CommonName != "192.0.2.10" {
		t.Errorf("CN %s, want the advertise address", leaf.Subject.CommonName)
	}
	onDisk, err := os.ReadFile(filepath.Join(pki, certs.ServingCertFile))
	if err != nil {
		t.Fatal(err)
	}

	// A restart reuses the certificate.
	o2, _ := newTestOptions(t, "--bind-address=0.0.0.0", "--service-cluster-ip-range=10.96.0.0/12", "--external-hostname=api.example.com",
		"--data-dir="+o.Etcd.DataDir)
	o2.SecureServing.AlternateDNS, o2.SecureServing.AlternateIPs = o.SecureServing.AlternateDNS, o.SecureServing.AlternateIPs
	if _, err := o2.Complete(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o2.SecureServing.Certificate.Certificate[0], o.SecureServing.Certificate.Certificate[0]) {
		t.Error("restart generated a new serving certificate")
	}
	if again, _ := os.ReadFile(filepath.Join(pki, certs.ServingCertFile)); !bytes.Equal(again, onDisk) {
		t.Error("restart rewrote apiserver.crt")
	}

	// --cert-dir wins over the data directory.
	certDir := t.TempDir()
	o3, _ := newTestOptions(t, "--cert-dir="+certDir)
	if _, err := o3.Complete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(certDir, certs.ServingCertFile)); err != nil {
		t.Errorf("--cert-dir: %v", err)
	}
}

func TestDevelopmentPKI(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		o, _ := newTestOptions(t, "--secure-port=9443")
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		kc := filepath.Join(o.Etcd.DataDir, "kubeconfig")
		if o.SecureServing.AdminKubeconfig != kc {
			t.Fatalf("admin kubeconfig %q, want %q", o.SecureServing.AdminKubeconfig, kc)
		}
		data, err := os.ReadFile(kc)
		if err != nil || !strings.Contains(string(data), "server: https://127.0.0.1:9443") {
			t.Fatalf("kubeconfig: %v\n%s", err, data)
		}
		// The CA that signed the serving certificate verifies clients.
		admin, err := os.ReadFile(filepath.Join(o.Etcd.DataDir, "pki", certs.AdminCertFile))
		if err != nil {
			t.Fatal(err)
		}
		pool := o.Authentication.ClientCA.ClientCAs()
		if pool == nil {
			t.Fatal("no client CA")
		}
		pair, err := tls.X509KeyPair(admin, mustRead(t, filepath.Join(o.Etcd.DataDir, "pki", certs.AdminKeyFile)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := servingLeaf(t, &pair).Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("admin certificate not accepted by the client CA: %v", err)
		}
		if err := servingLeaf(t, o.SecureServing.Certificate).CheckSignatureFrom(o.SecureServing.CA.Cert); err != nil {
			t.Errorf("serving certificate not from the development CA: %v", err)
		}
	})
	t.Run("port 0 opens the listener", func(t *testing.T) {
		o, _ := newTestOptions(t, "--secure-port=0")
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		defer o.SecureServing.Listener.Close()
		port := o.SecureServing.Listener.Addr().(*net.TCPAddr).Port
		if o.SecureServing.BindPort != port || port == 0 {
			t.Errorf("port %d, listener on %d", o.SecureServing.BindPort, port)
		}
		if data := mustRead(t, o.SecureServing.AdminKubeconfig); !strings.Contains(string(data), "server: https://127.0.0.1:"+itoa(port)) {
			t.Errorf("kubeconfig does not point at the port:\n%s", data)
		}
	})
	t.Run("off", func(t *testing.T) {
		o, _ := newTestOptions(t, "--dev-pki=false")
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		if o.SecureServing.AdminKubeconfig != "" || o.Authentication.ClientCA != nil {
			t.Error("development PKI made although --dev-pki=false")
		}
		if _, err := os.Stat(filepath.Join(o.Etcd.DataDir, "kubeconfig")); !os.IsNotExist(err) {
			t.Errorf("kubeconfig written: %v", err)
		}
	})
	t.Run("real client CA", func(t *testing.T) {
		dir := t.TempDir()
		ca, err := certs.NewCA("operator-ca", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		caFile := writeFile(t, dir, "ca.crt", string(ca.CertPEM))
		o, _ := newTestOptions(t, "--client-ca-file="+caFile)
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		if o.SecureServing.AdminKubeconfig != "" {
			t.Error("development PKI made although --client-ca-file was given")
		}
		if !o.Authentication.ClientCA.ClientCAs().Equal(mustPool(t, ca.CertPEM)) {
			t.Error("client CA is not --client-ca-file's")
		}
	})
	t.Run("real serving certificate", func(t *testing.T) {
		dir := t.TempDir()
		ca, err := certs.NewCA("operator-ca", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := ca.IssueServing([]string{"api.example.com"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		o, logs := newTestOptions(t, "--tls-cert-file="+writeFile(t, dir, "tls.crt", string(pair.CertPEM)),
			"--tls-private-key-file="+writeFile(t, dir, "tls.key", string(pair.KeyPEM)))
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		if servingLeaf(t, o.SecureServing.Certificate).Subject.CommonName != "api.example.com" || o.SecureServing.CA != nil {
			t.Error("serving certificate is not --tls-cert-file's")
		}
		if o.SecureServing.AdminKubeconfig != "" || o.Authentication.ClientCA != nil {
			t.Error("development PKI made although --tls-cert-file was given")
		}
		if entries, _ := filepath.Glob(filepath.Join(o.Etcd.DataDir, "*")); len(entries) > 0 {
			t.Errorf("files written with real certificates: %v", entries)
		}
		if !strings.Contains(logs.String(), "no development PKI") {
			t.Errorf("no word about the missing client CA: %s", logs)
		}
	})
}

func TestServiceAccountComplete(t *testing.T) {
	dir := t.TempDir()
	key, pub := writeECKey(t, dir)
	t.Run("generator for the first issuer", func(t *testing.T) {
		o, _ := newTestOptions(t, "--service-account-issuer=https://first", "--service-account-issuer=https://second",
			"--service-account-signing-key-file="+key)
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		sa := o.ServiceAccount
		if sa.Generator == nil || sa.Generator.Issuer() != "https://first" {
			t.Fatalf("generator %+v", sa.Generator)
		}
		if len(sa.PublicKeys) != 1 || !sa.SigningKey.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(sa.PublicKeys[0]) {
			t.Error("verification keys do not default to the signing key's")
		}
	})
	t.Run("verification keys", func(t *testing.T) {
		o, _ := newTestOptions(t, "--service-account-key-file="+pub, "--service-account-key-file="+key)
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		if len(o.ServiceAccount.PublicKeys) != 2 || o.ServiceAccount.Generator != nil {
			t.Errorf("%d public keys, generator %v", len(o.ServiceAccount.PublicKeys), o.ServiceAccount.Generator)
		}
	})
	const transition = "service-account-extend-token-expiration is true, in order to correctly trigger safe transition logic, service-account-max-token-expiration must be set longer than 3607 seconds (currently 1h0m0s)"
	const extension = "service-account-extend-token-expiration is true, enabling tokens valid up to 31536000 seconds, which is longer than service-account-max-token-expiration set to "
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"--service-account-max-token-expiration=1h"}, []string{transition, extension + "1h0m0s"}, nil},
		{[]string{"--service-account-max-token-expiration=2h"}, []string{extension + "2h0m0s"}, []string{"safe transition"}},
		{[]string{"--service-account-max-token-expiration=8784h"}, nil, []string{"safe transition", "enabling tokens"}},
		{[]string{"--service-account-max-token-expiration=1h", "--service-account-extend-token-expiration=false"}, nil, []string{"safe transition", "enabling tokens"}},
		{nil, nil, []string{"safe transition", "enabling tokens"}},
	} {
		o, logs := newTestOptions(t, tc.args...)
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(logs.String(), "level=WARN msg=\""+w) {
				t.Errorf("%q: no warning %q in\n%s", tc.args, w, logs)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(logs.String(), n) {
				t.Errorf("%q: unexpected warning %q in\n%s", tc.args, n, logs)
			}
		}
	}
}

func TestWatchCacheSizesComplete(t *testing.T) {
	defaults := map[meta.GroupResource]int{{Resource: "events"}: 0, {Group: "example.com", Resource: "widgets"}: 50}
	o, _ := newTestOptions(t, "--watch-cache-sizes=widgets.example.com#100,pods#5")
	o.Etcd.DefaultWatchCacheSizes = defaults
	if _, err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"events#0", "pods#5", "widgets.example.com#100"}; !reflect.DeepEqual(o.Etcd.WatchCacheSizes, want) {
		t.Errorf("written back %q, want %q", o.Etcd.WatchCacheSizes, want)
	}
	wc := o.Etcd.WatchCache
	for gr, want := range map[meta.GroupResource]struct {
		size   int
		cached bool
	}{
		{Resource: "events"}:                         {0, false},
		{Resource: "pods"}:                           {5, true},
		{Group: "example.com", Resource: "widgets"}:  {100, true},
		{Group: "example.com", Resource: "gadgets"}:  {0, true},
		{Group: "wardle.example.com", Resource: "x"}: {0, true},
	} {
		if size, cached := wc.Size(gr); size != want.size || cached != want.cached {
			t.Errorf("%s: size %d cached %v, want %d %v", gr, size, cached, want.size, want.cached)
		}
	}
	// Completing twice changes nothing.
	if _, err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"events#0", "pods#5", "widgets.example.com#100"}; !reflect.DeepEqual(o.Etcd.WatchCacheSizes, want) {
		t.Errorf("second Complete: %q", o.Etcd.WatchCacheSizes)
	}

	off, _ := newTestOptions(t, "--watch-cache=false", "--watch-cache-sizes=pods#5")
	if _, err := off.Complete(); err != nil {
		t.Fatal(err)
	}
	if _, cached := off.Etcd.WatchCache.Size(meta.GroupResource{Resource: "pods"}); cached || off.Etcd.WatchCache.Enabled {
		t.Error("watch cache on with --watch-cache=false")
	}
}

func TestWatchCacheSizesRoundTrip(t *testing.T) {
	for _, entries := range [][]string{
		nil,
		{"pods#0"},
		{"events#0", "flunders.wardle.example.com#1000", "pods#5", "widgets.v1.example.com#7"},
	} {
		sizes, err := ParseWatchCacheSizes(entries)
		if err != nil {
			t.Fatal(err)
		}
		back, err := WriteWatchCacheSizes(sizes)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 && len(back) == 0 {
			continue
		}
		if !reflect.DeepEqual(back, entries) {
			t.Errorf("round trip of %q gave %q", entries, back)
		}
		again, err := ParseWatchCacheSizes(back)
		if err != nil || !reflect.DeepEqual(again, sizes) {
			t.Errorf("parse of %q gave %v, want %v (%v)", back, again, sizes, err)
		}
	}
	if sizes, _ := ParseWatchCacheSizes([]string{"widgets.v1.example.com#7"}); sizes[meta.GroupResource{Group: "v1.example.com", Resource: "widgets"}] != 7 {
		t.Errorf("the group starts at the first dot: %v", sizes)
	}
	if _, err := WriteWatchCacheSizes(map[meta.GroupResource]int{{Resource: "pods"}: -1}); err == nil || err.Error() != "watch cache size cannot be negative for resource pods" {
		t.Errorf("negative size: %v", err)
	}
}

func TestFlowControlComplete(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 15 * time.Second},
		{[]string{"--request-timeout=2m"}, 30 * time.Second},
		{[]string{"--request-timeout=0"}, 0},
	} {
		o, _ := newTestOptions(t, tc.args...)
		c, err := o.Complete()
		if err != nil {
			t.Fatal(err)
		}
		if o.FlowControl.RequestWaitLimit != tc.want {
			t.Errorf("%q: queue wait limit %v, want %v", tc.args, o.FlowControl.RequestWaitLimit, tc.want)
		}
		cfg := newConfig(t, c)
		if cfg.RequestWaitLimit != tc.want || !cfg.EnablePriorityAndFairness {
			t.Errorf("%q: config queue wait limit %v, APF %v", tc.args, cfg.RequestWaitLimit, cfg.EnablePriorityAndFairness)
		}
	}
}

func TestAnonymousWithAlwaysAllow(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		anonymous bool
		warned    bool
	}{
		{[]string{"--anonymous-auth"}, true, false}, // the default mode is RBAC
		{[]string{"--anonymous-auth", "--authorization-mode=AlwaysAllow"}, false, true},
		{[]string{"--anonymous-auth", "--authorization-mode=AlwaysDeny,AlwaysAllow"}, false, true},
		{[]string{"--anonymous-auth", "--authorization-mode=AlwaysDeny"}, true, false},
		{nil, false, false},
	} {
		o, logs := newTestOptions(t, tc.args...)
		if _, err := o.Complete(); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logs.String(), "AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer")
		if o.Authentication.Anonymous != tc.anonymous || warned != tc.warned {
			t.Errorf("%q: anonymous %v warned %v, want %v %v", tc.args, o.Authentication.Anonymous, warned, tc.anonymous, tc.warned)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustPool(t *testing.T, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p, err := certs.PoolFromPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
