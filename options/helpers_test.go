package options

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/apikit-dev/apikit/internal/testlog"
)

// newTestOptions returns defaults with a fresh data directory, a machine
// with one non-loopback address (192.0.2.10) and host name "testhost",
// and a logger writing to the returned buffer; args are parsed as flags.
func newTestOptions(t *testing.T, args ...string) (*ServerRunOptions, *testlog.Buffer) {
	t.Helper()
	o := NewServerRunOptions()
	o.Etcd.DataDir = t.TempDir()
	o.Generic.hostIPs = func() ([]net.IP, error) { return []net.IP{net.ParseIP("192.0.2.10")}, nil }
	o.Generic.hostname = func() (string, error) { return "testhost", nil }
	logs := &testlog.Buffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fss := o.Flags()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	for _, n := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[n])
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return o, logs
}

// errorStrings flattens what Complete returned into its messages.
func errorStrings(err error) []string {
	if err == nil {
		return nil
	}
	var errs Errors
	if errors.As(err, &errs) {
		out := make([]string, len(errs))
		for i, e := range errs {
			out[i] = e.Error()
		}
		return out
	}
	return []string{err.Error()}
}

// writeECKey writes a PEM ECDSA private key and its public key into dir
// and returns their paths.
func writeECKey(t *testing.T, dir string) (private, public string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	private, public = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		t.Fatal(err)
	}
	return private, public
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func joinLines(s []string) string { return strings.Join(s, "\n") }
