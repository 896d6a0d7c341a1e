package cel

import (
	"regexp"
	"strings"
)

// celReserved are the words CEL reserves; a property so named is reached
// as __name__.
var celReserved = map[string]bool{
	"true": true, "false": true, "null": true, "in": true, "as": true, "break": true, "const": true,
	"continue": true, "else": true, "for": true, "function": true, "if": true, "import": true, "let": true,
	"loop": true, "package": true, "namespace": true, "return": true, "var": true, "void": true, "while": true,
}

var (
	escapable = regexp.MustCompile(`^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$`)
	expand    = regexp.MustCompile(`__|[./\-]`)
	collapse  = regexp.MustCompile(`__(underscores|dot|dash|slash|[a-z]+)__`)
)

// Escape returns the CEL identifier a schema property is reached by, as
// kube escapes it: reserved words as __word__, and "__", ".", "-" and "/"
// spelled out. A property that cannot be escaped (it starts with a digit
// or holds other characters) is not visible to rules.
func Escape(name string) (string, bool) {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return "", false
	}
	if celReserved[name] {
		return "__" + name + "__", true
	}
	if !escapable.MatchString(name) {
		return "", false
	}
	return expand.ReplaceAllStringFunc(name, func(s string) string {
		switch s {
		case "__":
			return "__underscores__"
		case ".":
			return "__dot__"
		case "-":
			return "__dash__"
		default:
			return "__slash__"
		}
	}), true
}

// Unescape reverses Escape.
func Unescape(escaped string) string {
	if strings.HasPrefix(escaped, "__") && strings.HasSuffix(escaped, "__") && celReserved[escaped[2:len(escaped)-2]] {
		return escaped[2 : len(escaped)-2]
	}
	return collapse.ReplaceAllStringFunc(escaped, func(s string) string {
		switch s {
		case "__underscores__":
			return "__"
		case "__dot__":
			return "."
		case "__dash__":
			return "-"
		case "__slash__":
			return "/"
		}
		return s
	})
}
