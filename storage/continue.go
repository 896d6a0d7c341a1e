package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// continueToken is the body of a continue token, in the format
// kube-apiserver uses, so tokens look familiar in logs and tools.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	StartKey   string `json:"start"`
}

const continueAPIVersion = "meta.k8s.io/v1"

// EncodeContinue returns a token that resumes a list under prefix right
// after lastKey, at revision rev.
func EncodeContinue(lastKey, prefix string, rev int64) (string, error) {
	if !strings.HasPrefix(lastKey, prefix) {
		return "", fmt.Errorf("key %q is not under prefix %q", lastKey, prefix)
	}
	b, err := json.Marshal(continueToken{
		APIVersion: continueAPIVersion,
		Revision:   rev,
		StartKey:   strings.TrimPrefix(lastKey, prefix) + "\x00",
	})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue returns the key to resume from (inclusive) and the revision
// of a token made by EncodeContinue for prefix. A malformed token is an
// ErrInvalidObject-coded error whose message the registry shows as a 400.
func DecodeContinue(token, prefix string) (startKey string, rev int64, err error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, invalidContinue("%v", err)
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return "", 0, invalidContinue("%v", err)
	}
	if t.APIVersion != continueAPIVersion {
		return "", 0, invalidContinue("continue key is not valid: incorrect encoded start resourceVersion (version %s)", t.APIVersion)
	}
	if t.Revision <= 0 {
		return "", 0, invalidContinue("continue key is not valid: incorrect encoded start resourceVersion (resourceVersion %d)", t.Revision)
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

// ListPrefix is the key prefix a list or watch of prefix covers: prefix
// with a trailing "/", so that "/flunders" does not cover "/flunderspecs".
// Every backend and the watch cache read prefixes this way.
func ListPrefix(prefix string) string {
	if !strings.HasSuffix(prefix, "/") {
		return prefix + "/"
	}
	return prefix
}

func invalidContinue(format string, args ...any) error {
	return &Error{Code: CodeInvalidObject, Message: "invalid continue token: " + fmt.Sprintf(format, args...)}
}
