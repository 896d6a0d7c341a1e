package options

import (
	"path/filepath"
	"testing"
)

// TestCompleteRejects checks every validation rule and its message:
// Complete must report exactly these errors, all of them, and write
// nothing.
func TestCompleteRejects(t *testing.T) {
	dir := t.TempDir()
	garbage := writeFile(t, dir, "garbage.pem", "not PEM at all")
	missing := filepath.Join(dir, "missing.pem")
	saKey, _ := writeECKey(t, dir)

	cases := []struct {
		name string
		args []string
		want []string
	}{
		// secure serving
		{"port too high", []string{"--secure-port=70000"}, []string{"--secure-port 70000 must be between 0 and 65535, inclusive. 0 picks a free port"}},
		{"port negative", []string{"--secure-port=-1"}, []string{"--secure-port -1 must be between 0 and 65535, inclusive. 0 picks a free port"}},
		{"cert without key", []string{"--tls-cert-file=" + garbage}, []string{"--tls-cert-file and --tls-private-key-file must be given together"}},
		{"key without cert", []string{"--tls-private-key-file=" + garbage}, []string{"--tls-cert-file and --tls-private-key-file must be given together"}},
		{"unreadable serving pair", []string{"--tls-cert-file=" + garbage, "--tls-private-key-file=" + garbage},
			[]string{"--tls-cert-file/--tls-private-key-file: tls: failed to find any PEM data in certificate input"}},
		{"old TLS", []string{"--tls-min-version=VersionTLS11"}, []string{"--tls-min-version VersionTLS11 is not supported: apikit serves TLS 1.2 and later"}},
		{"unknown TLS", []string{"--tls-min-version=TLS9"}, []string{`unknown tls version "TLS9"`}},
		{"unknown cipher", []string{"--tls-cipher-suites=TLS_NOPE"}, []string{"Cipher suite TLS_NOPE not supported or doesn't exist"}},
		{"ciphers with TLS 1.3", []string{"--tls-min-version=VersionTLS13", "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			[]string{"cipher suites may not be specified when --tls-min-version is 'VersionTLS13'"}},

		// generic
		{"negative in-flight", []string{"--max-requests-inflight=-1"}, []string{"--max-requests-inflight can not be negative value"}},
		{"negative mutating in-flight", []string{"--max-mutating-requests-inflight=-1"}, []string{"--max-mutating-requests-inflight can not be negative value"}},
		{"negative request timeout", []string{"--request-timeout=-1s"}, []string{"--request-timeout can not be negative value"}},
		{"negative min request timeout", []string{"--min-request-timeout=-1"}, []string{"--min-request-timeout can not be negative value"}},
		{"negative shutdown delay", []string{"--shutdown-delay-duration=-1s"}, []string{"--shutdown-delay-duration can not be negative value"}},

		// flow control
		{"no concurrency with APF", []string{"--max-requests-inflight=0", "--max-mutating-requests-inflight=0"},
			[]string{"invalid configuration: MaxRequestsInFlight=0 and MaxMutatingRequestsInFlight=0; they must add up to something positive"}},

		// etcd
		{"unknown backend", []string{"--storage-backend=redis"},
			[]string{"--storage-backend invalid, allowed values: embedded, etcd3, memory. If not specified, it will default to 'embedded', or 'etcd3' when --etcd-servers is given"}},
		{"etcd3 without servers", []string{"--storage-backend=etcd3"}, []string{"--etcd-servers must be specified"}},
		{"memory with servers", []string{"--storage-backend=memory", "--etcd-servers=http://127.0.0.1:2379"}, []string{"--etcd-servers cannot be used with --storage-backend=memory"}},
		{"embedded without data dir", []string{"--data-dir="}, []string{"--data-dir must be specified with --storage-backend=embedded"}},
		{"etcd cert without key", []string{"--etcd-certfile=c.pem"}, []string{"--etcd-certfile and --etcd-keyfile must be given together"}},
		{"negative compaction", []string{"--etcd-compaction-interval=-1m"}, []string{"--etcd-compaction-interval can not be negative value"}},
		{"object size limit of 0", []string{"--storage-max-object-bytes=0"}, []string{"--storage-max-object-bytes must be positive"}},
		{"watch cache entry without size", []string{"--watch-cache-sizes=pods"}, []string{"invalid value of watch cache size: pods"}},
		{"watch cache size not a number", []string{"--watch-cache-sizes=flunders.wardle.example.com#many"}, []string{"invalid size of watch cache size: flunders.wardle.example.com#many"}},
		{"negative watch cache size", []string{"--watch-cache-sizes=pods#-1"}, []string{"watch cache size cannot be negative: pods#-1"}},

		// authentication
		{"missing client CA", []string{"--client-ca-file=" + missing}, []string{"--client-ca-file: open " + missing + ": no such file or directory"}},
		{"client CA not PEM", []string{"--client-ca-file=" + garbage}, []string{"--client-ca-file " + garbage + ": no PEM certificates found"}},

		// service accounts
		{"short max expiration", []string{"--service-account-max-token-expiration=59m"}, []string{"the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"}},
		{"long max expiration", []string{"--service-account-max-token-expiration=4294967297s"}, []string{"the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"}},
		{"empty issuer", []string{"--service-account-issuer="}, []string{"service-account-issuer should not be an empty string"}},
		{"repeated issuer", []string{"--service-account-issuer=https://a", "--service-account-issuer=https://a"}, []string{`service-account-issuer "https://a" is already specified`}},
		{"issuer not a URL", []string{"--service-account-issuer=https://[::1"},
			[]string{`service-account-issuer "https://[::1" contained a ':' but was not a valid URL: parse "https://[::1": missing ']' in host`}},
		{"signing key without issuer", []string{"--service-account-signing-key-file=" + saKey}, []string{"--service-account-signing-key-file requires --service-account-issuer"}},
		{"signing key unparsable", []string{"--service-account-issuer=https://a", "--service-account-signing-key-file=" + garbage},
			[]string{"failed to parse --service-account-signing-key-file: " + garbage + ": data does not contain a valid RSA or ECDSA private key"}},
		{"signing key missing", []string{"--service-account-issuer=https://a", "--service-account-signing-key-file=" + missing},
			[]string{"failed to parse --service-account-signing-key-file: open " + missing + ": no such file or directory"}},
		{"verification key unparsable", []string{"--service-account-key-file=" + garbage},
			[]string{"failed to parse --service-account-key-file: " + garbage + ": data does not contain any valid RSA or ECDSA public keys"}},

		// authorization
		{"no authorization mode", []string{"--authorization-mode="}, []string{"at least one authorization-mode must be passed"}},
		{"unknown authorization mode", []string{"--authorization-mode=ABAC"}, []string{`authorization-mode "ABAC" is not a valid mode`}},
		{"webhook without config", []string{"--authorization-mode=RBAC,Webhook"}, []string{"authorization-mode Webhook's authorization config file not passed"}},
		{"webhook config without webhook", []string{"--authorization-webhook-config-file=" + garbage}, []string{"cannot specify --authorization-webhook-config-file without mode Webhook"}},
		{"unreadable webhook config", []string{"--authorization-mode=Webhook", "--authorization-webhook-config-file=" + missing},
			[]string{"--authorization-webhook-config-file: reading kubeconfig: open " + missing + ": no such file or directory"}},
		{"negative webhook TTL", []string{"--authorization-webhook-cache-authorized-ttl=-1s", "--authorization-webhook-cache-unauthorized-ttl=-1s"},
			[]string{"--authorization-webhook-cache-authorized-ttl can not be negative value", "--authorization-webhook-cache-unauthorized-ttl can not be negative value"}},
		{"star inside an always-allowed path", []string{"--authorization-always-allow-paths=/a*/b"}, []string{`--authorization-always-allow-paths: only trailing * allowed in "/a*/b"`}},
		{"repeated authorization mode", []string{"--authorization-mode=AlwaysDeny,AlwaysDeny"}, []string{`authorization-mode ["AlwaysDeny" "AlwaysDeny"] has mode specified more than once`}},

		// API enablement
		{"only api/all=false", []string{"--runtime-config=api/all=false"}, []string{"invalid key with only api/all=false"}},
		{"bad runtime-config value", []string{"--runtime-config=wardle.example.com/v1=maybe"},
			[]string{`invalid value of wardle.example.com/v1: maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`}},
		{"runtime-config key of a resource", []string{"--runtime-config=wardle.example.com/v1/flunders=false"},
			[]string{"runtime-config invalid key wardle.example.com/v1/flunders: single resources cannot be enabled or disabled, only <group>/<version>"}},
		{"runtime-config key too long", []string{"--runtime-config=a/b/c/d"}, []string{"runtime-config invalid key a/b/c/d"}},
		{"runtime-config key without version", []string{"--runtime-config=wardle.example.com/"}, []string{"runtime-config invalid key wardle.example.com/"}},

		// service IP ranges
		{"primary range not a CIDR", []string{"--service-cluster-ip-range=10.0.0.0"}, []string{"service-cluster-ip-range[0] is not a valid cidr"}},
		{"secondary range not a CIDR", []string{"--service-cluster-ip-range=10.0.0.0/24,fd00::"}, []string{"service-cluster-ip-range[1] is not an ip net"}},
		{"primary range too small", []string{"--service-cluster-ip-range=10.0.0.0/30"},
			[]string{"error determining service IP ranges for primary service cidr: the service cluster IP range must be at least 8 IP addresses"}},
		{"primary range too large", []string{"--service-cluster-ip-range=10.0.0.0/8"},
			[]string{"specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12"}},
		{"IPv6 secondary range too large", []string{"--service-cluster-ip-range=10.0.0.0/24,fd00::/64"},
			[]string{"specified --service-cluster-ip-range[1] is too large; for 128-bit addresses, the mask must be >= 108"}},
		{"two ranges of one family", []string{"--service-cluster-ip-range=10.0.0.0/24,10.1.0.0/24"},
			[]string{"--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family"}},
		{"three ranges", []string{"--service-cluster-ip-range=10.0.0.0/24,fd00::/108,10.2.0.0/24"},
			[]string{"--service-cluster-ip-range must not contain more than two entries"}},

		// logs
		{"unknown log level", []string{"--log-level=loud"}, []string{`--log-level "loud" is not one of debug, info, warn, error`}},

		// all together, in group order
		{"every problem at once", []string{"--secure-port=99999", "--storage-backend=tape", "--service-cluster-ip-range=nope",
			"--authorization-mode=Nope", "--service-account-issuer=https://a", "--service-account-signing-key-file=" + garbage}, []string{
			"--secure-port 99999 must be between 0 and 65535, inclusive. 0 picks a free port",
			"--storage-backend invalid, allowed values: embedded, etcd3, memory. If not specified, it will default to 'embedded', or 'etcd3' when --etcd-servers is given",
			`authorization-mode "Nope" is not a valid mode`,
			"service-cluster-ip-range[0] is not a valid cidr",
			"failed to parse --service-account-signing-key-file: " + garbage + ": data does not contain a valid RSA or ECDSA private key",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := newTestOptions(t, tc.args...)
			_, err := o.Complete()
			if got := errorStrings(err); joinLines(got) != joinLines(tc.want) {
				t.Errorf("Complete(%q) errors:\n%s\nwant:\n%s", tc.args, joinLines(got), joinLines(tc.want))
			}
			if o.Etcd.DataDir == "" {
				return
			}
			if entries, _ := filepath.Glob(filepath.Join(o.Etcd.DataDir, "*")); len(entries) > 0 {
				t.Errorf("invalid options wrote %v", entries)
			}
		})
	}
}

// TestCompleteAccepts checks values at the edges of the rules.
func TestCompleteAccepts(t *testing.T) {
	for _, args := range [][]string{
		{"--secure-port=65535"},
		{"--max-requests-inflight=0", "--max-mutating-requests-inflight=0", "--enable-priority-and-fairness=false"},
		{"--max-requests-inflight=0", "--max-mutating-requests-inflight=1"},
		{"--service-account-max-token-expiration=1h"},
		{"--service-account-max-token-expiration=4294967296s"},
		{"--service-cluster-ip-range=10.0.0.0/29"},
		{"--service-cluster-ip-range=10.0.0.0/12,fd00::/108"},
		{"--storage-backend=memory", "--data-dir="},
		{"--etcd-servers=http://127.0.0.1:2379"},
		{"--runtime-config=api/all=false,wardle.example.com/v1beta1=true"},
		{"--runtime-config=api/legacy=false,api/v1/pods=false,v1"},
		{"--tls-min-version=VersionTLS13"},
		{"--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		{"--authorization-mode=AlwaysDeny,AlwaysAllow"},
		{"--authorization-mode=Webhook,RBAC", "--authorization-webhook-config-file=" + webhookKubeconfig(t)},
		{"--watch-cache-sizes=pods#0,flunders.wardle.example.com#1000"},
		{"--log-level=DEBUG"},
	} {
		o, _ := newTestOptions(t, args...)
		if _, err := o.Complete(); err != nil {
			t.Errorf("Complete(%q): %v", args, err)
		}
	}
}
