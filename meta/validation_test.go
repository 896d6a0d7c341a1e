package meta

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The regular expressions Kubernetes validates with: the hand-written checks
// must accept exactly what they accept.
var (
	k8sDNS1123LabelRe     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	k8sDNS1123SubdomainRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	k8sQualifiedNameRe    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	k8sLabelValueRe       = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
)

func TestValidationChecksMatchKubernetesRegexps(t *testing.T) {
	inputs := []string{"", "a", "A", "0", "-", ".", "_", "a-b", "a.b", "a_b", "a..b", "-a", "a-", ".a", "a.", "_a", "a_",
		"a/b", "Ab", "aB", "a b", "é", "a\n", "\na", "example.com", "ex-ample.c-om", "a.-b", "a-.b"}
	const alphabet = "aZ09-._/ \n\x00é"
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.IntN(8); n > 0; n-- {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	for _, s := range inputs {
		if got, want := isDNS1123Label(s), k8sDNS1123LabelRe.MatchString(s); got != want {
			t.Errorf("isDNS1123Label(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := isDNS1123Subdomain(s), k8sDNS1123SubdomainRe.MatchString(s); got != want {
			t.Errorf("isDNS1123Subdomain(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := isQualifiedNamePart(s), k8sQualifiedNameRe.MatchString(s); got != want {
			t.Errorf("isQualifiedNamePart(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := len(ValidateLabelValue(s)) == 0, k8sLabelValueRe.MatchString(s); got != want {
			t.Errorf("ValidateLabelValue(%q) valid = %v, regexp says %v", s, got, want)
		}
	}
}

func TestValidateMessages(t *testing.T) {
	const subdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character " +
		"(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	const labelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character " +
		"(e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	const dns1035Msg = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character " +
		"(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
	tests := []struct {
		name string
		fn   func(string) []string
		in   string
		want []string
	}{
		{"subdomain ok", ValidateDNS1123Subdomain, "flunders.wardle.example.com", nil},
		{"subdomain uppercase", ValidateDNS1123Subdomain, "Flunder", []string{subdomainMsg}},
		{"subdomain too long", ValidateDNS1123Subdomain, strings.Repeat("a", 254), []string{"must be no more than 253 characters"}},
		{"subdomain too long and invalid", ValidateDNS1123Subdomain, strings.Repeat("A", 254), []string{"must be no more than 253 characters", subdomainMsg}},
		{"label ok", ValidateDNS1123Label, "kube-system", nil},
		{"label with dot", ValidateDNS1123Label, "a.b", []string{labelMsg}},
		{"label too long", ValidateDNS1123Label, strings.Repeat("a", 64), []string{"must be no more than 63 characters"}},
		{"qualified ok", ValidateQualifiedName, "app.kubernetes.io/name", nil},
		{"qualified no prefix", ValidateQualifiedName, "MyName", nil},
		{"qualified empty", ValidateQualifiedName, "", []string{"name part must be non-empty", k8sNamePartMsg}},
		{"qualified bad name", ValidateQualifiedName, "a/-b", []string{k8sNamePartMsg}},
		{"qualified empty prefix", ValidateQualifiedName, "/b", []string{"prefix part must be non-empty"}},
		{"qualified bad prefix", ValidateQualifiedName, "Example.com/b", []string{k8sPrefixMsg}},
		{"qualified long prefix", ValidateQualifiedName, strings.Repeat("a", 254) + "/b", []string{"prefix part must be no more than 253 characters"}},
		{"qualified long name", ValidateQualifiedName, "a/" + strings.Repeat("b", 64), []string{"name part must be no more than 63 characters"}},
		{"qualified two slashes", ValidateQualifiedName, "a/b/c", []string{k8sQualifiedNameMsg}},
		{"qualified two slashes with bad parts", ValidateQualifiedName, "/-/", []string{k8sQualifiedNameMsg}},
		{"label value empty", ValidateLabelValue, "", nil},
		{"label value ok", ValidateLabelValue, "v1.2_3-x", nil},
		{"label value bad", ValidateLabelValue, "a b", []string{k8sLabelValueMsg}},
		{"label value too long", ValidateLabelValue, strings.Repeat("x", 64), []string{"must be no more than 63 characters"}},
		{"1035 label ok", ValidateDNS1035Label, "v1beta1", nil},
		{"1035 label starting with a digit", ValidateDNS1035Label, "1v", []string{dns1035Msg}},
		{"1035 label with a dot", ValidateDNS1035Label, "a.b", []string{dns1035Msg}},
		{"1035 label too long", ValidateDNS1035Label, strings.Repeat("a", 64), []string{"must be no more than 63 characters"}},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestValidateConfigMapKey(t *testing.T) {
	const regexMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' " +
		"(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"plain", "key.name", nil},
		{"upper and underscore", "KEY_NAME", nil},
		{"leading dot", ".dotfile", nil},
		{"empty", "", []string{regexMsg}},
		{"slash", "a/b", []string{regexMsg}},
		{"space", "a b", []string{regexMsg}},
		{"dot", ".", []string{"must not be '.'"}},
		{"dot dot", "..", []string{"must not be '..'"}},
		{"dot dot prefix", "..a", []string{"must not start with '..'"}},
		{"too long", strings.Repeat("a", 254), []string{"must be no more than 253 characters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidateConfigMapKey(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ValidateConfigMapKey(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if valid, re := len(ValidateConfigMapKey(tt.in)) == 0, k8sConfigMapKeyRe.MatchString(tt.in) && len(tt.in) <= 253 && tt.in != "." && !strings.HasPrefix(tt.in, ".."); valid != re {
				t.Errorf("ValidateConfigMapKey(%q) valid = %v, Kubernetes' rules say %v", tt.in, valid, re)
			}
		})
	}
}

var k8sConfigMapKeyRe = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

func TestValidatePathSegmentName(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		prefix bool
		want   []string
	}{
		{"core group's APIService", "v1.", false, nil},
		{"RBAC name with a colon", "system:discovery", false, nil},
		{"upper case and underscore", "UPPER_case", false, nil},
		{"empty", "", false, nil},
		{"dot", ".", false, []string{"may not be '.'"}},
		{"dot dot", "..", false, []string{"may not be '..'"}},
		{"dot prefix", ".", true, nil},
		{"dot dot prefix", "..", true, nil},
		{"dots inside", "a..b", false, nil},
		{"slash", "a/b", false, []string{"may not contain '/'"}},
		{"percent", "a%2Fb", false, []string{"may not contain '%'"}},
		{"slash and percent", "a/%b", false, []string{"may not contain '/'", "may not contain '%'"}},
		{"slash and percent prefix", "a%b/", true, []string{"may not contain '/'", "may not contain '%'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidatePathSegmentName(tt.in, tt.prefix); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ValidatePathSegmentName(%q, %t) = %q, want %q", tt.in, tt.prefix, got, tt.want)
			}
		})
	}
}
