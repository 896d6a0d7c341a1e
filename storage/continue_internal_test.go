package storage

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// TestParseEncodedToken: the tokens encodeStart makes take the direct
// path, and bodies in any other form are left to json.Unmarshal.
func TestParseEncodedToken(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		direct     bool
	}{
		{"encoded", mustBody(t, "/f/ns/a\x00", 7), true},
		{"NULs inside", mustBody(t, "/f/a\x00b\x00", 1), true},
		{"latest revision", mustBody(t, "/f/a", latestRevision), true},
		{"non-ASCII", mustBody(t, "/f/é\x00", 1<<40), true},
		{"HTML escape", mustBody(t, "/f/a<b", 1), false},
		{"other escape", `{"v":"meta.k8s.io/v1","rv":1,"start":"a\nb"}`, false},
		{"escaped quote", `{"v":"meta.k8s.io/v1","rv":1,"start":"a\"}`, false},
		{"raw control", "{\"v\":\"meta.k8s.io/v1\",\"rv\":1,\"start\":\"a\tb\"}", false},
		{"invalid UTF-8", "{\"v\":\"meta.k8s.io/v1\",\"rv\":1,\"start\":\"a\xffb\"}", false},
		{"leading zero", `{"v":"meta.k8s.io/v1","rv":01,"start":"a"}`, false},
		{"exponent", `{"v":"meta.k8s.io/v1","rv":1e3,"start":"a"}`, false},
		{"overflow", `{"v":"meta.k8s.io/v1","rv":99999999999999999999,"start":"a"}`, false},
		{"spaces", `{"v": "meta.k8s.io/v1", "rv": 1, "start": "a"}`, false},
		{"other order", `{"rv":1,"v":"meta.k8s.io/v1","start":"a"}`, false},
		{"trailing field", `{"v":"meta.k8s.io/v1","rv":1,"start":"a","x":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseEncodedToken([]byte(tc.body))
			if ok != tc.direct {
				t.Fatalf("parseEncodedToken(%s) took the direct path: %v, want %v", tc.body, ok, tc.direct)
			}
			if !ok {
				return
			}
			var want continueToken
			if err := json.Unmarshal([]byte(tc.body), &want); err != nil || got != want {
				t.Errorf("parseEncodedToken(%s) = %+v; json.Unmarshal: %+v, %v", tc.body, got, want, err)
			}
		})
	}
}

func mustBody(t testing.TB, start string, rev int64) string {
	t.Helper()
	tok, err := encodeStart(start, "/f/", rev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzParseEncodedToken: whatever a token's body holds, the direct path
// reads it as json.Unmarshal does, or leaves it to json.Unmarshal.
//
//	go test ./storage -run - -fuzz FuzzParseEncodedToken -fuzztime 30s
func FuzzParseEncodedToken(f *testing.F) {
	f.Add(mustBody(f, "/f/ns/a\x00", 7))
	f.Add(mustBody(f, "/f/a\x00b<", -1))
	f.Add(`{"v":"meta.k8s.io/v1","rv":-0,"start":"\u0000"}`)
	f.Add(`{"v":"meta.k8s.io/v1","rv":1,"start":"\u00001"}`)
	f.Fuzz(func(t *testing.T, body string) {
		got, ok := parseEncodedToken([]byte(body))
		if !ok {
			return
		}
		var want continueToken
		if err := json.Unmarshal([]byte(body), &want); err != nil || got != want {
			t.Fatalf("parseEncodedToken(%q) = %+v; json.Unmarshal: %+v, %v", body, got, want, err)
		}
	})
}
