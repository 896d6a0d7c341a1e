package serviceaccounts

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
	sa, err := st.Create(ctx, "ns", &ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: "robot"}}, registry.WriteOptions{})
	if err != nil {
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
			`TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified`},
		{"other namespace", TokenRequest{ObjectMeta: meta.ObjectMeta{Namespace: "other"}},
			`TokenRequest.authentication.k8s.io "robot" is invalid: metadata.namespace: Invalid value: "other": must match the service account namespace if specified`},
		{"other uid", TokenRequest{ObjectMeta: meta.ObjectMeta{UID: "00000000-0000-0000-0000-000000000001"}},
			`Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "robot": the UID in the token request (00000000-0000-0000-0000-000000000001) does not match the UID of the service account (` + sa.UID + `)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			out, err := h.issue(ctx, "ns", "robot", &req, nil)
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
	if _, err := h.issue(ctx, "ns", "nobody", &TokenRequest{}, nil); !meta.IsNotFound(err) {
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
	out, err := h.issue(ctx, "ns", "robot", &TokenRequest{}, nil)
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

// TestTokenRequestResponse: the answer to a TokenRequest carries what
// kube-apiserver's does: the service account's uid, a creationTimestamp,
// one managedFields entry of the writer on the token subresource with the
// fields it set (defaults included, not the audiences the server fills
// in), a null boundObjectRef, and the lifetime as the server cut it.
func TestTokenRequestResponse(t *testing.T) {
	st, h, _ := setup(t)
	sa, err := st.Create(context.Background(), "ns", &ServiceAccount{ObjectMeta: meta.ObjectMeta{Name: "robot"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, query, body string
		maxExpiration     time.Duration
		wantManager       string
		wantFields        string
		wantSpec          string
		wantWarning       string
	}{
		{name: "expirationSeconds", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}`,
			wantManager: "Go-http-client", wantFields: `{"f:spec":{"f:expirationSeconds":{}}}`,
			wantSpec: `{"audiences":["api"],"expirationSeconds":3600,"boundObjectRef":null}`},
		{name: "defaulted", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`,
			wantManager: "Go-http-client", wantFields: `{"f:spec":{"f:expirationSeconds":{}}}`,
			wantSpec: `{"audiences":["api"],"expirationSeconds":3600,"boundObjectRef":null}`},
		{name: "audiences and labels", query: "?fieldManager=me",
			body:        `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"name":"robot","labels":{"a":"b"}},"spec":{"audiences":["vault"]}}`,
			wantManager: "me", wantFields: `{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{"f:audiences":{},"f:expirationSeconds":{}}}`,
			wantSpec: `{"audiences":["vault"],"expirationSeconds":3600,"boundObjectRef":null}`},
		{name: "shortened", maxExpiration: 2 * time.Hour,
			body:        `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":86400}}`,
			wantManager: "Go-http-client", wantFields: `{"f:spec":{"f:expirationSeconds":{}}}`,
			wantSpec:    `{"audiences":["api"],"expirationSeconds":7200,"boundObjectRef":null}`,
			wantWarning: `299 - "requested expiration of 86400 seconds shortened to 7200 seconds"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.tokens.MaxExpiration = tt.maxExpiration
			r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/serviceaccounts/robot/token"+tt.query, strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("User-Agent", "Go-http-client/1.1")
			r.SetPathValue("namespace", "ns")
			r.SetPathValue("name", "robot")
			w := httptest.NewRecorder()
			start := time.Now().Add(-time.Second)
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if got := w.Header().Get("Warning"); got != tt.wantWarning {
				t.Errorf("Warning %q, want %q", got, tt.wantWarning)
			}
			var out struct {
				Metadata struct {
					Name, Namespace, UID string
					CreationTimestamp    *time.Time
					ManagedFields        []struct {
						Manager, Operation, APIVersion, FieldsType, Subresource string
						Time                                                    *time.Time
						FieldsV1                                                json.RawMessage
					}
				}
				Spec   json.RawMessage
				Status struct {
					Token               string
					ExpirationTimestamp time.Time
				}
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			md := out.Metadata
			if md.Name != "robot" || md.Namespace != "ns" || md.UID != sa.UID {
				t.Errorf("metadata %+v, want robot in ns with uid %s", md, sa.UID)
			}
			if md.CreationTimestamp == nil || md.CreationTimestamp.Before(start) {
				t.Errorf("creationTimestamp %v, want the time of the request", md.CreationTimestamp)
			}
			if len(md.ManagedFields) != 1 {
				t.Fatalf("managedFields %+v, want one entry", md.ManagedFields)
			}
			e := md.ManagedFields[0]
			if e.Manager != tt.wantManager || e.Operation != "Update" || e.APIVersion != "authentication.k8s.io/v1" ||
				e.FieldsType != "FieldsV1" || e.Subresource != "token" || e.Time == nil || string(e.FieldsV1) != tt.wantFields {
				t.Errorf("managedFields entry %+v (fieldsV1 %s)\nwant %s's Update of authentication.k8s.io/v1 on token with %s", e, e.FieldsV1, tt.wantManager, tt.wantFields)
			}
			if string(out.Spec) != tt.wantSpec {
				t.Errorf("spec %s, want %s", out.Spec, tt.wantSpec)
			}
			var secs struct{ ExpirationSeconds int64 }
			_ = json.Unmarshal(out.Spec, &secs)
			if d := out.Status.ExpirationTimestamp.Sub(*md.CreationTimestamp); out.Status.Token == "" || d < time.Duration(secs.ExpirationSeconds)*time.Second || d > time.Duration(secs.ExpirationSeconds+1)*time.Second {
				t.Errorf("status %+v: want a token expiring %ds after %v", out.Status, secs.ExpirationSeconds, md.CreationTimestamp)
			}
		})
	}
}
