package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// continueToken is the body of a continue token, in the format
// kube-apiserver uses, so tokens look familiar in logs and tools.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	StartKey   string `json:"start"`
}

const continueAPIVersion = "meta.k8s.io/v1"

// latestRevision is the revision of an "inconsistent continue" token: the
// list resumes at the latest revision. kube-apiserver uses -1 rather than 0
// so that such a token differs from a bad one without a revision.
const latestRevision = -1

// EncodeContinue returns a token that resumes a list under prefix right
// after lastKey, at revision rev.
func EncodeContinue(lastKey, prefix string, rev int64) (string, error) {
	return encodeStart(lastKey+"\x00", prefix, rev)
}

// encodeStart returns a token that resumes a list under prefix at start
// (inclusive), at revision rev.
func encodeStart(start, prefix string, rev int64) (string, error) {
	if !strings.HasPrefix(start, prefix) {
		return "", fmt.Errorf("key %q is not under prefix %q", start, prefix)
	}
	b, err := json.Marshal(continueToken{
		APIVersion: continueAPIVersion,
		Revision:   rev,
		StartKey:   strings.TrimPrefix(start, prefix),
	})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Messages of a continued list whose revision was compacted, as
// kube-apiserver words them.
const (
	continueExpiredMessage = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter."
	inconsistentContinueMessage = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
)

// NewContinueExpired is the ErrExpired of a continued list (plan.Continued)
// whose revision is compacted: as kube-apiserver's, it carries in Continue
// an "inconsistent continue" token that resumes the list where it stopped,
// at the latest revision. cause is the backend's error.
func NewContinueExpired(plan ListPlan, prefix string, cause error) error {
	e := &Error{Code: CodeExpired, Revision: plan.Revision, Err: cause}
	token, err := encodeStart(plan.Start, prefix, latestRevision)
	if err != nil {
		// A start outside the prefix cannot come from PlanList: report
		// the plain expiry rather than a token that would not decode.
		e.Message = continueExpiredMessage
		return e
	}
	e.Message, e.Continue = inconsistentContinueMessage, token
	return e
}

// DecodeContinue returns the key to resume from (inclusive) and the revision
// of a token made by EncodeContinue for prefix; a negative revision (from
// NewContinueExpired) means the latest. A malformed token is an
// ErrInvalidObject-coded error whose message the registry shows as a 400.
func DecodeContinue(token, prefix string) (startKey string, rev int64, err error) {
	// As kube-apiserver's DecodeContinue: "continue key is not valid: ..."
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, invalidContinue("continue key is not valid: %v", err)
	}
	t, ok := parseEncodedToken(b)
	if !ok {
		if err := json.Unmarshal(b, &t); err != nil {
			return "", 0, invalidContinue("continue key is not valid: %v", err)
		}
	}
	if t.APIVersion != continueAPIVersion {
		return "", 0, invalidContinue("continue key is not valid: incorrect encoded start resourceVersion (version %s)", t.APIVersion)
	}
	if t.Revision == 0 {
		// A negative revision (an "inconsistent continue" token) resumes
		// at the latest revision; zero is no revision at all.
		return "", 0, invalidContinue("continue key is not valid: incorrect encoded start resourceVersion (version %s)", t.APIVersion)
	}
	if t.StartKey == "" {
		return "", 0, invalidContinue("continue key is not valid: encoded start key is empty")
	}
	// A token is client input: refuse one that would walk out of the prefix.
	clean := strings.TrimSuffix(t.StartKey, "\x00")
	if strings.Contains(clean, "\x00") || strings.HasPrefix(path.Clean("/"+clean), "/..") || strings.Contains("/"+clean+"/", "/../") {
		return "", 0, invalidContinue("continue key is not valid: %s", "it escapes the list prefix")
	}
	return prefix + t.StartKey, t.Revision, nil
}

// encodedTokenHead is how every token encodeStart makes begins:
// json.Marshal writes continueToken's fields in order.
const encodedTokenHead = `{"v":"` + continueAPIVersion + `","rv":`

// parseEncodedToken reads a token body in exactly the form encodeStart
// writes (a decimal revision; a start key of valid UTF-8 whose only
// escapes are its NULs, \u0000), and reports false for anything else,
// which json.Unmarshal then reads as kube-apiserver does, so that a token
// decodes the same either way (FuzzParseEncodedToken). Each page of a
// paged list decodes one, and json.Unmarshal's reflection was ~1.4% of a
// paged LIST's CPU.
func parseEncodedToken(b []byte) (continueToken, bool) {
	s := string(b)
	rest, ok := strings.CutPrefix(s, encodedTokenHead)
	if !ok {
		return continueToken{}, false
	}
	num, rest, ok := strings.Cut(rest, `,"start":"`)
	if !ok || !jsonInteger(num) {
		return continueToken{}, false
	}
	rev, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return continueToken{}, false
	}
	start, ok := strings.CutSuffix(rest, `"}`)
	if !ok || !utf8.ValidString(start) {
		return continueToken{}, false
	}
	nuls := 0
	for i := 0; i < len(start); i++ {
		switch c := start[i]; {
		case c < 0x20 || c == '"':
			return continueToken{}, false
		case c == '\\':
			if !strings.HasPrefix(start[i:], `\u0000`) {
				return continueToken{}, false
			}
			nuls++
			i += len(`\u0000`) - 1
		}
	}
	if nuls > 0 {
		start = strings.ReplaceAll(start, `\u0000`, "\x00")
	}
	return continueToken{APIVersion: continueAPIVersion, Revision: rev, StartKey: start}, true
}

// jsonInteger reports whether s is an integer as JSON writes one: an
// optional minus, then 0 or digits not starting with 0.
func jsonInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ListPrefix is the key prefix a list or watch of prefix covers: prefix
// with a trailing "/", so that "/flunders" does not cover "/flunderspecs".
// Every backend and the watch cache read prefixes this way.
func ListPrefix(prefix string) string {
	if !strings.HasSuffix(prefix, "/") {
		return prefix + "/"
	}
	return prefix
}

// ListPlan is where and at which revision a List starts, read from its
// options the same way by every backend and the watch cache.
type ListPlan struct {
	// Start is the first key: the prefix, or where a continue token
	// resumes.
	Start string
	// Revision is the revision to list at exactly (a continue token's,
	// or resourceVersionMatch=Exact, or a limited list with a
	// resourceVersion); 0 when the list is of the latest state.
	Revision int64
	// Continued is set when Start (and Revision, unless the token resumes
	// at the latest revision) come from a token.
	Continued bool
	// NotOlderThan, when set, is a revision the state listed must have
	// reached (resourceVersionMatch=NotOlderThan, or a resourceVersion
	// without a limit).
	NotOlderThan int64
	// Consistent is set for a list of the latest state that must reflect
	// every write made before it (no resourceVersion and not AnyRevision).
	Consistent bool
}

// PlanList reads opts for a list under prefix (already a ListPrefix).
// Errors are InvalidObject: a continue token with a revision, a bad token,
// an unknown resourceVersionMatch.
func PlanList(prefix string, opts ListOptions) (ListPlan, error) {
	p := ListPlan{Start: prefix}
	switch {
	case opts.Continue != "":
		if opts.Revision != 0 {
			return p, NewInvalidObject("specifying resource version is not allowed when using continue")
		}
		start, rev, err := DecodeContinue(opts.Continue, prefix)
		if err != nil {
			return p, err
		}
		p.Start, p.Continued = start, true
		if rev > 0 {
			p.Revision = rev
		} else {
			// An inconsistent continue token: the rest of the list as
			// it is now.
			p.Consistent = true
		}
	case opts.AnyRevision:
	case opts.Revision == 0:
		p.Consistent = true
	case opts.Match == MatchExact || (opts.Match == MatchDefault && opts.Limit > 0):
		p.Revision = opts.Revision
	case opts.Match == MatchNotOlderThan || opts.Match == MatchDefault:
		p.NotOlderThan = opts.Revision
	default:
		return p, NewInvalidObject("unknown resourceVersionMatch %q", opts.Match)
	}
	return p, nil
}

func invalidContinue(format string, args ...any) error {
	return &Error{Code: CodeInvalidObject, Message: "invalid continue token: " + fmt.Sprintf(format, args...)}
}
