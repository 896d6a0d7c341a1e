package meta

import (
	"strconv"
	"strings"
)

// The name and value rules of Kubernetes, with its messages word for word:
// clients and users match on them. The checks are hand-written rather than
// regular expressions because label selectors arrive with every LIST and
// WATCH and are validated on the request path; the *Fmt constants are the
// regular expressions Kubernetes uses and appear only in messages (the tests
// hold the checks to them).

const (
	dns1123LabelFmt          = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123SubdomainFmt      = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainErrorMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	dns1123LabelErrorMsg     = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"

	qualifiedNameCharFmt    = "[A-Za-z0-9]"
	qualifiedNameExtCharFmt = "[-A-Za-z0-9_.]"
	qualifiedNameFmt        = "(" + qualifiedNameCharFmt + qualifiedNameExtCharFmt + "*)?" + qualifiedNameCharFmt
	qualifiedNameErrMsg     = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	qualifiedNameMaxLength  = 63
	labelValueFmt           = "(" + qualifiedNameFmt + ")?"
	labelValueErrMsg        = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueMaxLength     = 63
	dns1123SubdomainMaxLen  = 253
	dns1123LabelMaxLen      = 63
)

// regexError formats a validation message as k8s.io/apimachinery does,
// including its doubled space after each example ("'MyName',  or").
func regexError(msg, format string, examples ...string) string {
	if len(examples) == 0 {
		return msg + " (regex used for validation is '" + format + "')"
	}
	msg += " (e.g. "
	for i, e := range examples {
		if i > 0 {
			msg += " or "
		}
		msg += "'" + e + "', "
	}
	return msg + "regex used for validation is '" + format + "')"
}

func maxLenError(n int) string { return "must be no more than " + strconv.Itoa(n) + " characters" }

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

// isDNS1123Label reports whether s matches dns1123LabelFmt.
func isDNS1123Label(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isLowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain reports whether s matches dns1123SubdomainFmt: labels
// joined by single dots.
func isDNS1123Subdomain(s string) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !isDNS1123Label(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// isQualifiedNamePart reports whether s matches qualifiedNameFmt.
func isQualifiedNamePart(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// ValidateDNS1123Subdomain returns the problems of value as an RFC 1123
// subdomain (the rule for most object names); none when it is valid.
func ValidateDNS1123Subdomain(value string) []string {
	var errs []string
	if len(value) > dns1123SubdomainMaxLen {
		errs = append(errs, maxLenError(dns1123SubdomainMaxLen))
	}
	if !isDNS1123Subdomain(value) {
		errs = append(errs, regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// ValidateDNS1123Label returns the problems of value as an RFC 1123 label
// (the rule for namespace names).
func ValidateDNS1123Label(value string) []string {
	var errs []string
	if len(value) > dns1123LabelMaxLen {
		errs = append(errs, maxLenError(dns1123LabelMaxLen))
	}
	if !isDNS1123Label(value) {
		errs = append(errs, regexError(dns1123LabelErrorMsg, dns1123LabelFmt, "my-name", "123-abc"))
	}
	return errs
}

// ValidateQualifiedName returns the problems of value as a qualified name:
// an optional DNS subdomain prefix and "/", then a name of at most 63
// characters (the rule for label and annotation keys and finalizers).
func ValidateQualifiedName(value string) []string {
	var errs []string
	name := value
	for i := 0; i < len(value); i++ {
		if value[i] != '/' {
			continue
		}
		prefix := value[:i]
		name = value[i+1:]
		for j := 0; j < len(name); j++ {
			if name[j] == '/' {
				// Kubernetes reports a second "/" as one error about the
				// whole value, without looking at its parts.
				return []string{"a valid label key " + regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc") +
					" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}
			}
		}
		if prefix == "" {
			errs = append(errs, "prefix part must be non-empty")
		} else {
			for _, msg := range ValidateDNS1123Subdomain(prefix) {
				errs = append(errs, "prefix part "+msg)
			}
		}
		break
	}
	if name == "" {
		errs = append(errs, "name part must be non-empty")
	} else if len(name) > qualifiedNameMaxLength {
		errs = append(errs, "name part "+maxLenError(qualifiedNameMaxLength))
	}
	if !isQualifiedNamePart(name) {
		errs = append(errs, "name part "+regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// ValidateLabelValue returns the problems of value as a label value: empty,
// or at most 63 characters that start and end alphanumeric with '-', '_' and
// '.' between.
func ValidateLabelValue(value string) []string {
	var errs []string
	if len(value) > labelValueMaxLength {
		errs = append(errs, maxLenError(labelValueMaxLength))
	}
	if value != "" && !isQualifiedNamePart(value) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}

const (
	dns1035LabelFmt      = "[a-z]([-a-z0-9]*[a-z0-9])?"
	dns1035LabelErrorMsg = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
)

// ValidateDNS1035Label returns the problems of value as an RFC 1035 label
// (the rule for the resource and version names of a
// CustomResourceDefinition); none when it is valid.
func ValidateDNS1035Label(value string) []string {
	var errs []string
	if len(value) > dns1123LabelMaxLen {
		errs = append(errs, maxLenError(dns1123LabelMaxLen))
	}
	if !isDNS1123Label(value) || value[0] < 'a' || value[0] > 'z' {
		errs = append(errs, regexError(dns1035LabelErrorMsg, dns1035LabelFmt, "my-name", "abc-123"))
	}
	return errs
}

const configMapKeyErrMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"

// ValidateConfigMapKey returns the problems of value as a key of a
// ConfigMap's or a Secret's data (it names a file when mounted): at most
// 253 of [-._a-zA-Z0-9], and neither "." nor "..", nor starting with "..".
func ValidateConfigMapKey(value string) []string {
	var errs []string
	if len(value) > dns1123SubdomainMaxLen {
		errs = append(errs, maxLenError(dns1123SubdomainMaxLen))
	}
	valid := value != ""
	for i := 0; i < len(value); i++ {
		if c := value[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			valid = false
			break
		}
	}
	if !valid {
		errs = append(errs, regexError(configMapKeyErrMsg, `[-._a-zA-Z0-9]+`, "key.name", "KEY_NAME", "key-name"))
	}
	switch {
	case value == ".":
		errs = append(errs, `must not be '.'`)
	case value == "..":
		errs = append(errs, `must not be '..'`)
	case strings.HasPrefix(value, ".."):
		errs = append(errs, `must not start with '..'`)
	}
	return errs
}

// ValidatePathSegmentName returns the problems of name as one segment of a
// URL path (and of a storage key), as k8s.io/apimachinery's
// ValidatePathSegmentName words them: it may not be "." or "..", nor
// contain "/" or "%". With prefix set name is a generateName prefix, which
// may be "." or ".." since a suffix follows. It is the whole rule for the
// names of RBAC objects, APIServices and custom resources, for a namespace
// or name in a request's path, and for names that policies refer to.
func ValidatePathSegmentName(name string, prefix bool) []string {
	if !prefix && (name == "." || name == "..") {
		return []string{"may not be '" + name + "'"}
	}
	var errs []string
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			errs = append(errs, "may not contain '"+bad+"'")
		}
	}
	return errs
}
