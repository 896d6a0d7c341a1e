package respond

import (
	"net/http"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// AddWarning adds msg to h as a Warning header, as kube-apiserver writes
// one: code 299, agent "-", the text in quotes with only `"` and `\`
// escaped (client-go's parser reads any other backslash as escaping the
// next character, so "\n" would reach kubectl as "n"). A message
// kube-apiserver cannot send, empty, not valid UTF-8 or holding a control
// character such as a newline, is left out, as kube-apiserver leaves it
// out.
func AddWarning(h http.Header, msg string) {
	if v, ok := warningHeader(msg); ok {
		h.Add("Warning", v)
	}
}

// warningHeader is the Warning header value of msg, if it can be sent.
func warningHeader(msg string) (string, bool) {
	if msg == "" || !utf8.ValidString(msg) || strings.ContainsFunc(msg, unicode.IsControl) {
		return "", false
	}
	var b strings.Builder
	b.Grow(len(msg) + 8)
	b.WriteString(`299 - "`)
	for _, c := range msg {
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	b.WriteByte('"')
	return b.String(), true
}

// WarningsOnce returns a function that adds a Warning header to w for each
// distinct message it is given, once, as kube-apiserver's per-request
// recorder dedupes them; it may be called concurrently (validating
// webhooks run in parallel). Its set of messages is made at the first
// warning: most requests have none.
func WarningsOnce(w http.ResponseWriter) func(msg string) {
	var mu sync.Mutex
	var seen map[string]bool
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		if seen[msg] {
			return
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[msg] = true
		AddWarning(w.Header(), msg)
	}
}
