package authn_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/internal/testlog"
)

func TestParseBearer(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"  Bearer abc  ", "abc", true},
		{"Bearer abc def", "abc", true}, // kube-apiserver ignores what follows
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer  abc", "", false}, // the token is the second word, and it is empty
		{"Bearer \tabc", "", false},
		{"Bearer a\x00b", "", false},
		{"Basic YWxpY2U6cGFzcw==", "", false},
		{"Bearerabc", "", false},
		{"", "", false},
		{"abc", "", false},
	} {
		token, ok := authn.ParseBearer(tc.header)
		if token != tc.token || ok != tc.ok {
			t.Errorf("ParseBearer(%q) = %q, %v; want %q, %v", tc.header, token, ok, tc.token, tc.ok)
		}
	}
}

// staticTokens authenticates "good" as alice and fails "bad".
var staticTokens = authn.TokenFunc(func(_ context.Context, token string) (*authn.Response, bool, error) {
	switch token {
	case "good":
		return &authn.Response{User: authn.User{Name: "alice"}}, true, nil
	case "bad":
		return nil, false, errors.New("token expired")
	}
	return nil, false, nil
})

func TestBearerToken(t *testing.T) {
	a := authn.NewBearerToken(staticTokens)
	for _, tc := range []struct {
		name, header string
		wantUser     string
		wantErr      string
		keepsHeader  bool
	}{
		{name: "valid", header: "Bearer good", wantUser: "alice"},
		{name: "no header", header: "", keepsHeader: true},
		{name: "another scheme", header: "Basic Zm9vOmJhcg==", keepsHeader: true},
		{name: "unknown token is an error, not anonymous", header: "Bearer nobody-knows", wantErr: "invalid bearer token", keepsHeader: true},
		{name: "authenticator error", header: "Bearer bad", wantErr: "token expired", keepsHeader: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			resp, ok, err := a.AuthenticateRequest(r)
			switch {
			case tc.wantErr != "":
				if ok || err == nil || err.Error() != tc.wantErr {
					t.Errorf("ok=%v err=%v, want error %q", ok, err, tc.wantErr)
				}
			case tc.wantUser == "":
				if ok || err != nil {
					t.Errorf("ok=%v err=%v, want neither", ok, err)
				}
			default:
				if !ok || err != nil || resp.User.Name != tc.wantUser {
					t.Errorf("got %+v %v %v", resp, ok, err)
				}
			}
			if kept := r.Header.Get("Authorization") == tc.header; kept != tc.keepsHeader {
				t.Errorf("Authorization header kept=%v, want %v", kept, tc.keepsHeader)
			}
		})
	}
}

func TestUnionAndAnonymous(t *testing.T) {
	user := func(name string) authn.Authenticator {
		return authn.Func(func(*http.Request) (*authn.Response, bool, error) {
			return &authn.Response{User: authn.User{Name: name}}, true, nil
		})
	}
	none := authn.Func(func(*http.Request) (*authn.Response, bool, error) { return nil, false, nil })
	failing := func(msg string) authn.Authenticator {
		return authn.Func(func(*http.Request) (*authn.Response, bool, error) { return nil, false, errors.New(msg) })
	}
	r := httptest.NewRequest("GET", "/apis", nil)

	if resp, ok, err := authn.Union(none, failing("x509: expired"), user("bob"), user("carol")).AuthenticateRequest(r); !ok || err != nil || resp.User.Name != "bob" {
		t.Errorf("the first that authenticates wins: %+v %v %v", resp, ok, err)
	}
	_, ok, err := authn.Union(failing("one"), none, failing("two")).AuthenticateRequest(r)
	if ok || err == nil || err.Error() != "one\ntwo" {
		t.Errorf("all errors are reported: %v %v", ok, err)
	}
	if _, ok, err := authn.Union().AuthenticateRequest(r); ok || err != nil {
		t.Errorf("empty union: %v %v", ok, err)
	}

	anon := authn.WithAnonymous(authn.Union(none), nil)
	resp, ok, err := anon.AuthenticateRequest(r)
	if !ok || err != nil || resp.User.Name != "system:anonymous" || !slices.Equal(resp.User.Groups, []string{"system:unauthenticated"}) {
		t.Errorf("anonymous: %+v %v %v", resp, ok, err)
	}
	if _, ok, err := authn.WithAnonymous(failing("bad token"), nil).AuthenticateRequest(r); ok || err == nil {
		t.Error("an invalid credential became anonymous")
	}
	if resp, _, _ := authn.WithAnonymous(user("dave"), nil).AuthenticateRequest(r); resp.User.Name != "dave" {
		t.Error("anonymous took precedence over a credential")
	}
	healthOnly := authn.WithAnonymous(none, func(r *http.Request) bool { return r.URL.Path == "/livez" })
	if _, ok, _ := healthOnly.AuthenticateRequest(httptest.NewRequest("GET", "/livez", nil)); !ok {
		t.Error("anonymous refused on an allowed path")
	}
	if _, ok, _ := healthOnly.AuthenticateRequest(r); ok {
		t.Error("anonymous allowed outside the allowed paths")
	}
}

func TestAudienceAgnostic(t *testing.T) {
	a := authn.AudienceAgnostic(authn.Audiences{"api", "other"}, staticTokens)
	ctx := context.Background()
	if resp, ok, _ := a.AuthenticateToken(ctx, "good"); !ok || len(resp.Audiences) != 0 {
		t.Errorf("no audiences asked: %+v %v", resp, ok)
	}
	if resp, ok, _ := a.AuthenticateToken(authn.WithAudiences(ctx, authn.Audiences{"x", "other"}), "good"); !ok || !slices.Equal(resp.Audiences, []string{"other"}) {
		t.Errorf("shared audience: %+v %v", resp, ok)
	}
	if _, ok, _ := a.AuthenticateToken(authn.WithAudiences(ctx, authn.Audiences{"someone-else"}), "good"); ok {
		t.Error("a token for the server passed for another audience")
	}
}

func TestParseTokenCSV(t *testing.T) {
	logs := testlog.Capture(t)
	for _, tc := range []struct {
		name, csv string
		want      []authn.User // by token t1, t2, ... in order
		wantErr   string
	}{
		{name: "kube-apiserver's format", csv: "t1,alice,u-1,\"dev,qa\"\nt2,bob,u-2\n",
			want: []authn.User{{Name: "alice", UID: "u-1", Groups: []string{"dev", "qa"}}, {Name: "bob", UID: "u-2"}}},
		{name: "extra columns are ignored", csv: "t1,alice,u-1,dev,whatever\n", want: []authn.User{{Name: "alice", UID: "u-1", Groups: []string{"dev"}}}},
		{name: "empty groups", csv: "t1,alice,u-1,\"\"\n", want: []authn.User{{Name: "alice", UID: "u-1"}}},
		{name: "empty token skipped", csv: ",nobody,u-0\nt1,alice,u-1\n", want: []authn.User{{Name: "alice", UID: "u-1"}}},
		{name: "blank lines", csv: "\n\nt1,alice,u-1\n\n", want: []authn.User{{Name: "alice", UID: "u-1"}}},
		{name: "duplicate: the later wins", csv: "t1,alice,u-1\nt1,mallory,u-9\n", want: []authn.User{{Name: "mallory", UID: "u-9"}}},
		{name: "too few columns", csv: "t1,alice\n", wantErr: "token file must have at least 3 columns (token, user name, user uid), found 2 in record 1"},
		{name: "bad quoting", csv: "t1,alice,u-1\nsecret\"token,bob,u-2\n", wantErr: "parse error on line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens, err := authn.ParseTokenCSV(strings.NewReader(tc.csv))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("the error shows a token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []authn.User
			for _, tok := range tokens {
				got = append(got, tok.User)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("users %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Name != tc.want[i].Name || got[i].UID != tc.want[i].UID || !slices.Equal(got[i].Groups, tc.want[i].Groups) {
					t.Errorf("user %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	if strings.Contains(logs.String(), "t1") {
		t.Errorf("a token reached the log:\n%s", logs)
	}
}

// TestTokenFile covers the token file authenticator, including revocation:
// a token whose line is removed stops working once the file is reloaded.
func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	writeFile(t, path, []byte("alice-token,alice,u-1,\"dev,qa\"\nbob-token,bob,u-2\n"))
	tf, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		token, user string
	}{
		{"alice-token", "alice"},
		{"bob-token", "bob"},
		{"alice-token ", ""},
		{"alice-toke", ""},
		{"", ""},
		{"ALICE-TOKEN", ""},
	} {
		resp, ok, err := tf.AuthenticateToken(ctx, tc.token)
		if err != nil {
			t.Fatalf("%q: %v", tc.token, err)
		}
		if (tc.user == "") == ok || (ok && resp.User.Name != tc.user) {
			t.Errorf("%q: %+v %v, want %q", tc.token, resp, ok, tc.user)
		}
	}
	resp, _, _ := tf.AuthenticateToken(ctx, "alice-token")
	if resp.User.UID != "u-1" || !slices.Equal(resp.User.Groups, []string{"dev", "qa"}) {
		t.Errorf("alice: %+v", resp.User)
	}

	t.Run("revoked by removal", func(t *testing.T) {
		replaceFile(t, path, []byte("bob-token,bob,u-2\n"))
		if err := tf.Reload(); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := tf.AuthenticateToken(ctx, "alice-token"); ok {
			t.Error("a removed token still authenticates")
		}
		if _, ok, _ := tf.AuthenticateToken(ctx, "bob-token"); !ok {
			t.Error("a kept token no longer authenticates")
		}
	})
	t.Run("reloaded without being asked", func(t *testing.T) {
		tf.SetReloadInterval(10 * time.Millisecond)
		writeFile(t, path, []byte("carol-token,carol,u-3\n"))
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, carol, _ := tf.AuthenticateToken(ctx, "carol-token")
			_, bob, _ := tf.AuthenticateToken(ctx, "bob-token")
			if carol && !bob {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the changed file was not picked up")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("a broken file keeps the tokens", func(t *testing.T) {
		writeFile(t, path, []byte("only,two\n"))
		if err := tf.Reload(); err == nil {
			t.Fatal("Reload of a broken file succeeded")
		}
		if _, ok, _ := tf.AuthenticateToken(ctx, "carol-token"); !ok {
			t.Error("a broken file revoked every token")
		}
	})
}
