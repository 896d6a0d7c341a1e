package serviceaccounts

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/internal/k8sproto/k8sprototest"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func setup(t *testing.T) (*registry.Store[*ServiceAccount], *tokenHandler, *serviceaccount.Authenticator) {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	st, err := New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := serviceaccount.NewGenerator("https://issuer.test", key)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := serviceaccount.NewAuthenticator([]string{"https://issuer.test"}, []crypto.PublicKey{key.Public()}, []string{"api"})
	if err != nil {
		t.Fatal(err)
	}
	authn.SetLookup(Lookup(st))
	return st, &tokenHandler{store: st, tokens: &serviceaccount.Tokens{Generator: gen, Authenticator: authn, APIAudiences: []string{"api"}}, now: time.Now}, authn
}

func TestTokenRequestValidation(t *testing.T) {
	st, h, _ := setup(t)
	ctx := context.Background()
	if _, err := st.Create(ctx, "ns", &ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: "robot"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	secs := func(n int64) *int64 { return &n }
	tests := []struct {
		name string
		req  TokenRequest
		want string
	}{
		{"default", TokenRequest{}, ""},
		{"too short", TokenRequest{Spec: TokenRequestSpec{ExpirationSeconds: secs(599)}},
			`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		{"too long", TokenRequest{Spec: TokenRequestSpec{ExpirationSeconds: secs(1<<32 + 1)}},
			`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds`},
		{"other name", TokenRequest{ObjectMeta: meta.ObjectMeta{Name: "other"}},
			`TokenRequest.authentication.k8s.io "" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			out, err := h.issue(ctx, "ns", "robot", &req)
			if tt.want != "" {
				if err == nil || err.Error() != tt.want {
					t.Fatalf("issue: %v\nwant %s", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Status.Token == "" || *out.Spec.ExpirationSeconds != DefaultExpirationSeconds || strings.Join(out.Spec.Audiences, ",") != "api" {
				t.Errorf("token request %+v", out)
			}
			if d := time.Until(out.Status.ExpirationTimestamp.Time); d < 59*time.Minute || d > 61*time.Minute {
				t.Errorf("expires in %v, want an hour", d)
			}
		})
	}
	if _, err := h.issue(ctx, "ns", "nobody", &TokenRequest{}); !meta.IsNotFound(err) {
		t.Errorf("token of a missing service account: %v, want NotFound", err)
	}
}

// TestTokenBoundToServiceAccount: the token authenticates as the service
// account with its uid, and no longer once it is deleted, nor after a
// namesake is created (another uid).
func TestTokenBoundToServiceAccount(t *testing.T) {
	st, h, authn := setup(t)
	ctx := context.Background()
	sa, err := st.Create(ctx, "ns", &ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: "robot"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.issue(ctx, "ns", "robot", &TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := authn.AuthenticateToken(ctx, out.Status.Token)
	if err != nil || !ok || resp.User.Name != "system:serviceaccount:ns:robot" || resp.User.UID != sa.UID {
		t.Fatalf("authenticate: ok=%v err=%v %+v", ok, err, resp)
	}
	if _, _, err := st.Delete(ctx, "ns", "robot", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := authn.AuthenticateToken(ctx, out.Status.Token); ok || err == nil || err.Error() != `serviceaccounts "robot" not found` {
		t.Errorf("after delete: ok=%v err=%v", ok, err)
	}
	again, err := st.Create(ctx, "ns", &ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: "robot"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "service account UID (" + again.UID + ") does not match claim (" + sa.UID + ")"
	if _, ok, err := authn.AuthenticateToken(ctx, out.Status.Token); ok || err == nil || err.Error() != want {
		t.Errorf("after recreate: ok=%v err=%v, want %s", ok, err, want)
	}
}

// TestDecodeTokenRequestProtobuf reads a TokenRequest as client-go's
// typed client posts it in protobuf (kubectl create token --bound-object-kind):
// the metadata and the spec, never the status.
func TestDecodeTokenRequestProtobuf(t *testing.T) {
	str := func(b []byte, n protowire.Number, s string) []byte { return k8sprototest.Bytes(b, n, []byte(s)) }
	ref := str(str(str(str(nil, 1, "Pod"), 2, "v1"), 3, "web-0"), 4, "u-1")
	spec := k8sprototest.Varint(k8sprototest.Bytes(str(str(nil, 1, "api"), 1, "vault"), 3, ref), 4, 900)
	status := str(nil, 1, "a token the client made up")
	obj := k8sprototest.Bytes(k8sprototest.Bytes(k8sprototest.Bytes(nil, 1, str(str(nil, 1, "robot"), 3, "ns")), 2, spec), 3, status)
	got, err := decodeTokenRequest("application/vnd.kubernetes.protobuf", k8sprototest.Envelope("authentication.k8s.io/v1", "TokenRequest", obj))
	if err != nil {
		t.Fatal(err)
	}
	secs := int64(900)
	want := &TokenRequest{TypeMeta: meta.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"},
		ObjectMeta: meta.ObjectMeta{Name: "robot", Namespace: "ns"},
		Spec: TokenRequestSpec{Audiences: []string{"api", "vault"}, ExpirationSeconds: &secs,
			BoundObjectRef: &BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web-0", UID: "u-1"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	_, err = decodeTokenRequest("application/vnd.kubernetes.protobuf", k8sprototest.Envelope("v1", "ServiceAccount", nil))
	if want := `ServiceAccount in version "v1" cannot be handled as a TokenRequest`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a ServiceAccount as a TokenRequest: %v, want %s", err, want)
	}
}
