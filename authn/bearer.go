package authn

import (
	"errors"
	"net/http"
	"strings"
	"unicode"
)

// errInvalidBearer is what a bearer token that no token authenticator
// recognised fails with; it never holds the token.
var errInvalidBearer = errors.New("invalid bearer token")

// ParseBearer extracts the token of an "Authorization: Bearer <token>"
// header value, as kube-apiserver reads it: the scheme is case-insensitive,
// surrounding space is ignored, and anything after the token (a second
// space-separated word) is ignored too. ok is false when the value is not a
// bearer credential or the token is empty. A token holding white space or
// control characters (a tab after "Bearer ", say) is refused: no token
// contains them, and kube-apiserver would pass them on to the
// authenticators as part of the token.
func ParseBearer(header string) (token string, ok bool) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", false
	}
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token, _, _ = strings.Cut(rest, " ")
	if token == "" || strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return "", false
	}
	return token, true
}

// NewBearerToken returns an Authenticator that hands the request's bearer
// token to t. A request without one is not its business (ok=false); a
// bearer token that t does not recognise is an error, so that an invalid
// token is refused rather than treated as anonymous. On success the
// Authorization header is removed, so that nothing behind the filter ever
// sees the credential.
func NewBearerToken(t TokenAuthenticator) Authenticator {
	return Func(func(r *http.Request) (*Response, bool, error) {
		token, ok := ParseBearer(r.Header.Get("Authorization"))
		if !ok {
			return nil, false, nil
		}
		resp, ok, err := t.AuthenticateToken(r.Context(), token)
		if ok {
			r.Header.Del("Authorization")
			return resp, true, nil
		}
		if err == nil {
			err = errInvalidBearer
		}
		return nil, false, err
	})
}
