package storage_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/storage"
)

func TestContinueRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		key, prefix string
		rev         int64
	}{
		{"/flunders/ns/a", "/flunders/", 7},
		{"/flunders/ns/a b", "/flunders/", 1},
		{"/x/é", "/x/", 1 << 40},
	} {
		tok, err := storage.EncodeContinue(tc.key, tc.prefix, tc.rev)
		if err != nil {
			t.Fatalf("EncodeContinue(%q, %q): %v", tc.key, tc.prefix, err)
		}
		start, rev, err := storage.DecodeContinue(tok, tc.prefix)
		if err != nil || start != tc.key+"\x00" || rev != tc.rev {
			t.Errorf("DecodeContinue(EncodeContinue(%q)) = %q %d %v", tc.key, start, rev, err)
		}
	}
	if _, err := storage.EncodeContinue("/other/a", "/flunders/", 1); err == nil {
		t.Error("a key outside the prefix was encoded")
	}
}

func TestDecodeContinueRefuses(t *testing.T) {
	for name, token := range map[string]string{
		"not base64":       "!!",
		"not JSON":         "bm90IGpzb24",                                    // "not json"
		"wrong version":    "eyJ2IjoidjIiLCJydiI6MSwic3RhcnQiOiJhIn0",        // {"v":"v2","rv":1,"start":"a"}
		"no revision":      "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJzdGFydCI6ImEifQ", // {"v":"meta.k8s.io/v1","start":"a"}
		"escapes the list": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi9zZWNyZXRzL3gifQ",
	} {
		_, _, err := storage.DecodeContinue(token, "/flunders/")
		var se *storage.Error
		if !errors.As(err, &se) || se.Code != storage.CodeInvalidObject || !strings.HasPrefix(se.Message, "invalid continue token: continue key is not valid: ") {
			t.Errorf("%s: %v, want kube-apiserver's \"invalid continue token: continue key is not valid: ...\"", name, err)
		}
	}
}

// FuzzDecodeContinue: a token is client input. Whatever it holds, decoding
// either fails with an invalid-object error or yields a key under the
// prefix, without "..", that encodes back to a token decoding the same.
//
//	go test ./storage -run - -fuzz FuzzDecodeContinue -fuzztime 30s
func FuzzDecodeContinue(f *testing.F) {
	for _, key := range []string{"/flunders/ns/a", "/flunders/../x", "/flunders/a\x00b"} {
		if tok, err := storage.EncodeContinue(key, "/flunders/", 3); err == nil {
			f.Add(tok)
		}
	}
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi9zZWNyZXRzL3gifQ")
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		const prefix = "/flunders/"
		start, rev, err := storage.DecodeContinue(token, prefix)
		if err != nil {
			var se *storage.Error
			if !errors.As(err, &se) || se.Code != storage.CodeInvalidObject {
				t.Fatalf("DecodeContinue(%q): %v, want an invalid-object error", token, err)
			}
			return
		}
		if !strings.HasPrefix(start, prefix) || rev <= 0 || strings.Contains("/"+strings.TrimSuffix(start, "\x00")+"/", "/../") {
			t.Fatalf("DecodeContinue(%q) = %q %d: outside the prefix", token, start, rev)
		}
	})
}

func TestPlanList(t *testing.T) {
	const prefix = "/flunders/"
	token, err := storage.EncodeContinue("/flunders/ns/a", prefix, 9)
	if err != nil {
		t.Fatal(err)
	}
	var expired *storage.Error
	if !errors.As(storage.NewContinueExpired(storage.ListPlan{Start: "/flunders/ns/a\x00", Revision: 9, Continued: true}, prefix, nil), &expired) {
		t.Fatal("NewContinueExpired returned no *storage.Error")
	}
	inconsistent := expired.Continue
	for _, tc := range []struct {
		name string
		opts storage.ListOptions
		want storage.ListPlan
		err  string
	}{
		{"consistent", storage.ListOptions{}, storage.ListPlan{Start: prefix, Consistent: true}, ""},
		{"any", storage.ListOptions{AnyRevision: true}, storage.ListPlan{Start: prefix}, ""},
		{"exact", storage.ListOptions{Revision: 5, Match: storage.MatchExact}, storage.ListPlan{Start: prefix, Revision: 5}, ""},
		{"a limit at a revision is exact", storage.ListOptions{Revision: 5, Limit: 2}, storage.ListPlan{Start: prefix, Revision: 5}, ""},
		{"not older than", storage.ListOptions{Revision: 5, Match: storage.MatchNotOlderThan, Limit: 2}, storage.ListPlan{Start: prefix, NotOlderThan: 5}, ""},
		{"a revision without a limit is not older than", storage.ListOptions{Revision: 5}, storage.ListPlan{Start: prefix, NotOlderThan: 5}, ""},
		{"continue", storage.ListOptions{Continue: token, Limit: 2}, storage.ListPlan{Start: "/flunders/ns/a\x00", Revision: 9, Continued: true}, ""},
		{"an inconsistent continue token", storage.ListOptions{Continue: inconsistent, Limit: 2}, storage.ListPlan{Start: "/flunders/ns/a\x00", Consistent: true, Continued: true}, ""},
		{"continue with a revision", storage.ListOptions{Continue: token, Revision: 3}, storage.ListPlan{}, "specifying resource version is not allowed when using continue"},
		{"a bad token", storage.ListOptions{Continue: "!!"}, storage.ListPlan{}, "invalid continue token"},
		{"an unknown match", storage.ListOptions{Revision: 5, Match: "Sometime"}, storage.ListPlan{}, `unknown resourceVersionMatch "Sometime"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := storage.PlanList(prefix, tc.opts)
			if tc.err != "" {
				if storage.CodeOf(err) != storage.CodeInvalidObject || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want an invalid-object error with %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("PlanList = %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestNewContinueExpired(t *testing.T) {
	const prefix = "/flunders/"
	err := storage.NewContinueExpired(storage.ListPlan{Start: "/flunders/ns/b\x00", Revision: 7, Continued: true}, prefix, storage.NewExpired(7, 9))
	var se *storage.Error
	if !errors.As(err, &se) || se.Code != storage.CodeExpired {
		t.Fatalf("got %v, want an ErrExpired *storage.Error", err)
	}
	// kube-apiserver's wording, and its token: revision -1, the same start.
	if want := "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."; se.Message != want {
		t.Errorf("message %q, want %q", se.Message, want)
	}
	raw, err := base64.RawURLEncoding.DecodeString(se.Continue)
	if err != nil {
		t.Fatalf("token %q: %v", se.Continue, err)
	}
	if want := `{"v":"meta.k8s.io/v1","rv":-1,"start":"ns/b\u0000"}`; string(raw) != want {
		t.Errorf("token body %s, want %s", raw, want)
	}
	start, rev, err := storage.DecodeContinue(se.Continue, prefix)
	if err != nil || start != "/flunders/ns/b\x00" || rev != -1 {
		t.Errorf("DecodeContinue = %q %d %v, want the same start at revision -1", start, rev, err)
	}
}

// BenchmarkDecodeContinue decodes the token of a page of a paged list.
func BenchmarkDecodeContinue(b *testing.B) {
	tok, err := storage.EncodeContinue("/wardle.example.com/flunders/bench/flunder-02500", "/wardle.example.com/flunders/", 123456)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := storage.DecodeContinue(tok, "/wardle.example.com/flunders/"); err != nil {
			b.Fatal(err)
		}
	}
}
