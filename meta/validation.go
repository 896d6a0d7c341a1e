package meta

import (
	"regexp"
	"strconv"
	"strings"
)

// The name and value rules of Kubernetes, with its messages word for word:
// clients and users match on them.

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

var (
	dns1123SubdomainRe = regexp.MustCompile("^" + dns1123SubdomainFmt + "$")
	dns1123LabelRe     = regexp.MustCompile("^" + dns1123LabelFmt + "$")
	qualifiedNameRe    = regexp.MustCompile("^" + qualifiedNameFmt + "$")
	labelValueRe       = regexp.MustCompile("^" + labelValueFmt + "$")
)

// regexError formats a validation message as k8s.io/apimachinery does.
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

// ValidateDNS1123Subdomain returns the problems of value as an RFC 1123
// subdomain (the rule for most object names); none when it is valid.
func ValidateDNS1123Subdomain(value string) []string {
	var errs []string
	if len(value) > dns1123SubdomainMaxLen {
		errs = append(errs, maxLenError(dns1123SubdomainMaxLen))
	}
	if !dns1123SubdomainRe.MatchString(value) {
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
	if !dns1123LabelRe.MatchString(value) {
		errs = append(errs, regexError(dns1123LabelErrorMsg, dns1123LabelFmt, "my-name", "123-abc"))
	}
	return errs
}

// ValidateQualifiedName returns the problems of value as a qualified name:
// an optional DNS subdomain prefix and "/", then a name of at most 63
// characters (the rule for label and annotation keys and finalizers).
func ValidateQualifiedName(value string) []string {
	var errs []string
	parts := strings.Split(value, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		var prefix string
		prefix, name = parts[0], parts[1]
		if prefix == "" {
			errs = append(errs, "prefix part must be non-empty")
		} else {
			for _, msg := range ValidateDNS1123Subdomain(prefix) {
				errs = append(errs, "prefix part "+msg)
			}
		}
	default:
		return append(errs, "a qualified name "+regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc")+
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if name == "" {
		errs = append(errs, "name part must be non-empty")
	} else if len(name) > qualifiedNameMaxLength {
		errs = append(errs, "name part "+maxLenError(qualifiedNameMaxLength))
	}
	if !qualifiedNameRe.MatchString(name) {
		errs = append(errs, "name part "+regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// ValidateLabelValue returns the problems of value as a label value.
func ValidateLabelValue(value string) []string {
	var errs []string
	if len(value) > labelValueMaxLength {
		errs = append(errs, maxLenError(labelValueMaxLength))
	}
	if !labelValueRe.MatchString(value) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}
