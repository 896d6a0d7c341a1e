package authn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// StaticToken is one line of a token file: a token and the user it
// authenticates.
type StaticToken struct {
	// digest is the SHA-256 of the token: what lookups compare, so that
	// every comparison has the same length and takes the same time.
	digest [sha256.Size]byte
	User   User
}

// ParseTokenCSV reads kube-apiserver's --token-auth-file format: one token
// per line, as CSV with at least three columns,
//
//	token,user,uid,"group1,group2"
//
// the fourth column (optional) being a comma-separated group list. Lines
// with an empty token are skipped; when a token appears twice the later
// line wins (both with a warning, as in kube-apiserver). Errors name lines,
// never tokens.
func ParseTokenCSV(r io.Reader) ([]StaticToken, error) {
	reader := csv.NewReader(r)
	reader.FieldsPerRecord = -1
	var tokens []StaticToken
	seen := map[[sha256.Size]byte]int{}
	for record := 0; ; {
		fields, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var perr *csv.ParseError
			if errors.As(err, &perr) {
				// csv.ParseError names the line and column only.
				return nil, fmt.Errorf("parsing token file: %w", perr)
			}
			return nil, fmt.Errorf("reading token file: %w", err)
		}
		record++
		if len(fields) < 3 {
			return nil, fmt.Errorf("token file must have at least 3 columns (token, user name, user uid), found %d in record %d", len(fields), record)
		}
		if fields[0] == "" {
			slog.Warn("empty token found in token file; skipped", "record", record)
			continue
		}
		t := StaticToken{digest: sha256.Sum256([]byte(fields[0])), User: User{Name: fields[1], UID: fields[2]}}
		if len(fields) >= 4 {
			for g := range strings.SplitSeq(fields[3], ",") {
				if g != "" {
					t.User.Groups = append(t.User.Groups, g)
				}
			}
		}
		if i, dup := seen[t.digest]; dup {
			slog.Warn("duplicate token found in token file; the later one wins", "record", record)
			tokens[i] = t
			continue
		}
		seen[t.digest] = len(tokens)
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// TokenFile authenticates the static tokens of a --token-auth-file. Unlike
// kube-apiserver, which reads the file once, it re-reads the file when it
// changes (looked at at most once per second): removing a line revokes the
// token within a second, plus whatever time a token cache in front of it
// remembers successes (10 s by default). A file that stops parsing leaves
// the previous tokens in force, with a warning.
type TokenFile struct {
	src *fileSource[[]StaticToken]
}

// NewTokenFile reads the token file at path.
func NewTokenFile(path string) (*TokenFile, error) {
	src, err := newFileSource(path, "token file", func(b []byte) ([]StaticToken, error) {
		return ParseTokenCSV(bytes.NewReader(b))
	})
	if err != nil {
		return nil, err
	}
	return &TokenFile{src: src}, nil
}

// NewStaticToken returns the entry authenticating token as u.
func NewStaticToken(token string, u User) StaticToken {
	return StaticToken{digest: sha256.Sum256([]byte(token)), User: u}
}

// NewStaticTokens returns a TokenAuthenticator for a fixed list (from
// ParseTokenCSV or NewStaticToken).
func NewStaticTokens(tokens []StaticToken) TokenAuthenticator {
	return TokenFunc(func(_ context.Context, token string) (*Response, bool, error) {
		return lookupToken(tokens, token)
	})
}

// SetReloadInterval changes how often the file is looked at (default
// DefaultReloadInterval).
func (f *TokenFile) SetReloadInterval(d time.Duration) { f.src.setInterval(d) }

// Reload re-reads the file now; on error the previous tokens stay.
func (f *TokenFile) Reload() error { return f.src.reload() }

// AuthenticateToken implements TokenAuthenticator.
func (f *TokenFile) AuthenticateToken(_ context.Context, token string) (*Response, bool, error) {
	return lookupToken(f.src.get(), token)
}

// lookupToken compares the token's digest with every entry's in constant
// time, without stopping at a match, so that how long a guess takes says
// nothing about how close it came or which entry it matched.
func lookupToken(tokens []StaticToken, token string) (*Response, bool, error) {
	digest := sha256.Sum256([]byte(token))
	match := -1
	for i := range tokens {
		eq := subtle.ConstantTimeCompare(tokens[i].digest[:], digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return nil, false, nil
	}
	u := tokens[match].User
	return &Response{User: User{Name: u.Name, UID: u.UID, Groups: u.Groups}}, true, nil
}
