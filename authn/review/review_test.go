package review

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

var tokens = authn.TokenFunc(func(ctx context.Context, token string) (*authn.Response, bool, error) {
	auds, _ := authn.AudiencesFrom(ctx)
	switch token {
	case "alice-token":
		if !auds.Has("api") && !auds.Has("vault") {
			return nil, false, nil
		}
		return &authn.Response{User: authn.User{Name: "alice", UID: "u-1", Groups: []string{"dev"}}, Audiences: auds.Intersect(authn.Audiences{"api", "vault"})}, true, nil
	case "expired":
		return nil, false, errTest
	case "liar":
		return &authn.Response{User: authn.User{Name: "liar"}, Audiences: []string{"elsewhere"}}, true, nil
	}
	return nil, false, nil
})

func resources(t *testing.T) (ssr, tr registry.Resource) {
	t.Helper()
	rs, err := Resources(tokens, []string{"api"})
	if err != nil {
		t.Fatal(err)
	}
	return rs[0], rs[1]
}

func create(t *testing.T, r registry.Resource, ctx context.Context, body string) (map[string]any, error) {
	t.Helper()
	obj := r.New()
	if err := json.Unmarshal([]byte(body), obj); err != nil {
		t.Fatal(err)
	}
	it, err := r.Create(ctx, "", obj, registry.WriteOptions{})
	if err != nil {
		return nil, err
	}
	b, err := it.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out["rawStatus"] = string(raw["status"])
	return out, nil
}

func TestTokenReview(t *testing.T) {
	_, tr := resources(t)
	if info := tr.Info(); info.Resource != "tokenreviews" || info.NamespaceScoped || !slices.Equal(info.Verbs, []string{"create"}) {
		t.Errorf("info %+v", info)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, body string
		want       string // the status, as JSON
		wantErr    string
	}{
		{name: "valid, for the API audiences", body: `{"spec":{"token":"alice-token"}}`,
			want: `{"authenticated":true,"user":{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"]},"audiences":["api"]}`},
		{name: "valid for an audience asked", body: `{"spec":{"token":"alice-token","audiences":["vault"]}}`,
			want: `{"authenticated":true,"user":{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"]},"audiences":["vault"]}`},
		// As kube-apiserver writes it: user is a struct, never omitted.
		{name: "not for that audience", body: `{"spec":{"token":"alice-token","audiences":["nobody"]}}`, want: `{"user":{}}`},
		{name: "unknown token", body: `{"spec":{"token":"whatever"}}`, want: `{"user":{}}`},
		{name: "no token", body: `{"spec":{}}`, wantErr: "token is required for TokenReview in authentication"},
		{name: "an authenticator answering for other audiences", body: `{"spec":{"token":"liar"}}`, wantErr: "error validating audience"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := create(t, tr, ctx, tc.body)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if status := out["rawStatus"]; status != tc.want {
				t.Errorf("status %s\nwant   %s", status, tc.want)
			}
			if out["kind"] != "TokenReview" || out["apiVersion"] != "authentication.k8s.io/v1" {
				t.Errorf("type %v %v", out["kind"], out["apiVersion"])
			}
			if spec, _ := json.Marshal(out["spec"]); strings.Contains(string(spec), "token") {
				t.Errorf("the token is sent back: %s", spec)
			}
		})
	}

	t.Run("errors are reported in the status", func(t *testing.T) {
		rs, _ := Resources(authn.TokenFunc(func(context.Context, string) (*authn.Response, bool, error) {
			return nil, false, errTest
		}), nil)
		out, err := create(t, rs[1], ctx, `{"spec":{"token":"x"}}`)
		if err != nil || out["status"].(map[string]any)["error"] != "token is expired" {
			t.Errorf("%v %v", out, err)
		}
	})
	t.Run("no token authenticators", func(t *testing.T) {
		rs, _ := Resources(nil, nil)
		out, err := create(t, rs[1], ctx, `{"spec":{"token":"x"}}`)
		if err != nil || out["rawStatus"] != `{"user":{}}` {
			t.Errorf("%v %v", out, err)
		}
	})
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("token is expired")

func TestSelfSubjectReview(t *testing.T) {
	ssr, _ := resources(t)
	u := &authn.User{Name: "alice", UID: "u-1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"scopes": {"read"}}}
	out, err := create(t, ssr, authn.WithUser(context.Background(), u), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"userInfo":{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"],"extra":{"scopes":["read"]}}}`
	if out["rawStatus"] != want || out["kind"] != "SelfSubjectReview" {
		t.Errorf("got  %v\nwant %s", out, want)
	}
	if _, err := create(t, ssr, context.Background(), `{}`); meta.ReasonForError(err) != meta.StatusReasonInternalError {
		t.Errorf("without a user: %v", err)
	}
}

// protobufBody encodes what client-go's typed clients post: the "k8s\0"
// magic and a runtime.Unknown holding the TypeMeta and the object.
func protobufBody(kind string, object []byte) []byte {
	var typeMeta []byte
	typeMeta = protowire.AppendTag(typeMeta, 1, protowire.BytesType)
	typeMeta = protowire.AppendString(typeMeta, "authentication.k8s.io/v1")
	typeMeta = protowire.AppendTag(typeMeta, 2, protowire.BytesType)
	typeMeta = protowire.AppendString(typeMeta, kind)
	body := []byte("k8s\x00")
	body = protowire.AppendTag(body, 1, protowire.BytesType)
	body = protowire.AppendBytes(body, typeMeta)
	body = protowire.AppendTag(body, 2, protowire.BytesType)
	return protowire.AppendBytes(body, object)
}

func TestProtobuf(t *testing.T) {
	var spec []byte
	spec = protowire.AppendTag(spec, 1, protowire.BytesType)
	spec = protowire.AppendString(spec, "alice-token")
	for _, a := range []string{"api", "vault"} {
		spec = protowire.AppendTag(spec, 2, protowire.BytesType)
		spec = protowire.AppendString(spec, a)
	}
	var objectMeta []byte
	objectMeta = protowire.AppendTag(objectMeta, 1, protowire.BytesType)
	objectMeta = protowire.AppendString(objectMeta, "review-1")
	var obj []byte
	obj = protowire.AppendTag(obj, 1, protowire.BytesType)
	obj = protowire.AppendBytes(obj, objectMeta)
	obj = protowire.AppendTag(obj, 2, protowire.BytesType)
	obj = protowire.AppendBytes(obj, spec)
	// A status saying authenticated: the client has no say in it.
	obj = protowire.AppendTag(obj, 3, protowire.BytesType)
	obj = protowire.AppendBytes(obj, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1))

	ssr, tr := resources(t)
	got, err := tr.(registry.ProtobufDecoder).ProtobufToJSON(protobufBody("TokenReview", obj))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{"name":"review-1"},"spec":{"token":"alice-token","audiences":["api","vault"]},"status":{"user":{}}}`; string(got) != want {
		t.Errorf("TokenReview:\n got %s\nwant %s", got, want)
	}
	// kubectl auth whoami posts an empty SelfSubjectReview.
	got, err = ssr.(registry.ProtobufDecoder).ProtobufToJSON(protobufBody("SelfSubjectReview", nil))
	if err != nil || string(got) != `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"status":{"userInfo":{}}}` {
		t.Errorf("SelfSubjectReview: %s %v", got, err)
	}
	if _, err := tr.(registry.ProtobufDecoder).ProtobufToJSON(protobufBody("SelfSubjectReview", nil)); err == nil ||
		!strings.Contains(err.Error(), `SelfSubjectReview in version "v1" cannot be handled as a TokenReview`) {
		t.Errorf("a SelfSubjectReview posted to tokenreviews: %v", err)
	}
	if _, err := tr.(registry.ProtobufDecoder).ProtobufToJSON([]byte(`{"kind":"TokenReview"}`)); err == nil {
		t.Error("JSON taken for protobuf")
	}
}
