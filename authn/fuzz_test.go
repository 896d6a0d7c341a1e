package authn_test

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/authn"
)

// FuzzParseTokenCSV feeds the token file parser arbitrary files: it must
// not panic, its errors must never quote a token, and every token it
// returns must authenticate as its user.
func FuzzParseTokenCSV(f *testing.F) {
	for _, seed := range []string{
		"t1,alice,u-1,\"dev,qa\"\n",
		"t1,alice,u-1\nt2,bob,u-2,ops\n",
		",nobody,u\n",
		"t1,alice\n",
		"\"t\"\"1\",alice,u-1\n",
		"t1,alice,u-1\r\nt2,bob,u-2\r\n",
		"\"unterminated,alice,u-1\n",
		"a\"b,alice,u-1\n",
		"t1,alice,u-1,\"a,,b,\"\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		tokens, err := authn.ParseTokenCSV(strings.NewReader(data))
		if err != nil {
			// The first field of each line is a token: it must not be quoted back.
			for _, line := range strings.Split(data, "\n") {
				if tok, _, _ := strings.Cut(line, ","); len(tok) >= 8 && strings.Contains(err.Error(), tok) {
					t.Fatalf("error %q quotes the token %q", err, tok)
				}
			}
			return
		}
		// Every record encoding/csv finds is a token that authenticates
		// as its (last) line says.
		records, err := csvRecords(data)
		if err != nil {
			t.Fatalf("ParseTokenCSV accepted what encoding/csv refuses: %v", err)
		}
		want := map[string][]string{}
		for _, r := range records {
			if r[0] != "" {
				want[r[0]] = r
			}
		}
		a := authn.NewStaticTokens(tokens)
		if len(tokens) != len(want) {
			t.Fatalf("%d tokens, want %d", len(tokens), len(want))
		}
		for token, r := range want {
			resp, ok, err := a.AuthenticateToken(context.Background(), token)
			if !ok || err != nil || resp.User.Name != r[1] || resp.User.UID != r[2] {
				t.Fatalf("token of line %q: %+v %v %v", r, resp, ok, err)
			}
			for _, g := range resp.User.Groups {
				if g == "" || strings.Contains(g, ",") {
					t.Fatalf("group %q", g)
				}
			}
		}
		if resp, ok, err := a.AuthenticateToken(context.Background(), ""); ok || err != nil {
			t.Fatalf("the empty token authenticated: %+v %v", resp, err)
		}
	})
}

func csvRecords(data string) ([][]string, error) {
	r := csv.NewReader(strings.NewReader(data))
	r.FieldsPerRecord = -1
	return r.ReadAll()
}

// FuzzParseBearer checks the bearer header parser: what it accepts is a
// non-empty token without spaces that a canonical header gives back.
func FuzzParseBearer(f *testing.F) {
	for _, seed := range []string{"Bearer abc", "bearer  abc", "Bearer", "Basic abc", " Bearer abc def ", "Bearer\tabc", "BEARER a.b.c", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := authn.ParseBearer(header)
		if !ok {
			if token != "" {
				t.Fatalf("not ok but token %q", token)
			}
			return
		}
		if token == "" || strings.Contains(token, " ") {
			t.Fatalf("token %q from %q", token, header)
		}
		if !strings.Contains(header, token) {
			t.Fatalf("token %q is not in %q", token, header)
		}
		if again, ok := authn.ParseBearer("Bearer " + token); !ok || again != token {
			t.Fatalf("Bearer %q parses as %q, %v", token, again, ok)
		}
	})
}
