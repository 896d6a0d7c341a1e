package storage_test

import (
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
		if !errors.As(err, &se) || se.Code != storage.CodeInvalidObject || !strings.HasPrefix(se.Message, "invalid continue token: ") {
			t.Errorf("%s: %v, want an invalid continue token error", name, err)
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
