package structural

import (
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// formats are the string formats kube-apiserver validates in a CRD's
// schema, keyed by name without dashes ("date-time" is "datetime"); it
// ignores any other format, int32 and int64 included.
var formats = map[string]func(string) bool{
	"bsonobjectid": rxMatch(`^[0-9a-fA-F]{24}$`),
	"uri":          isURI,
	"email":        isEmail,
	"hostname":     isHostname,
	"ipv4":         func(s string) bool { return parseIPSloppy(s) != nil && strings.Contains(s, ".") },
	"ipv6":         func(s string) bool { return net.ParseIP(s) != nil && strings.Contains(s, ":") },
	"cidr":         isCIDR,
	"mac":          func(s string) bool { _, err := net.ParseMAC(s); return err == nil },
	"uuid":         rxMatch(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`),
	"uuid3":        rxMatch(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$`),
	"uuid4":        rxMatch(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`),
	"uuid5":        rxMatch(`(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`),
	"isbn":         func(s string) bool { return isISBN10(s) || isISBN13(s) },
	"isbn10":       isISBN10,
	"isbn13":       isISBN13,
	"creditcard":   isCreditCard,
	"k8sshortname": func(s string) bool { return len(s) <= 63 && rxShortName().MatchString(s) },
	"k8slongname":  func(s string) bool { return len(s) <= 253 && rxLongName().MatchString(s) },
	"ssn":          func(s string) bool { return len(s) == 11 && rxSSN().MatchString(s) },
	"hexcolor":     rxMatch(`^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`),
	"rgbcolor":     rxMatch(`^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$`),
	"byte":         rxMatch(`^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`),
	"password":     func(string) bool { return true },
	"date":         isDate,
	"duration":     isDuration,
	"datetime":     isDateTime,
}

// supportedFormat returns the normalized name of a format kube-apiserver
// validates, or "" for one it ignores.
func supportedFormat(f string) string {
	if f == "" {
		return ""
	}
	n := strings.ReplaceAll(f, "-", "")
	if _, ok := formats[n]; !ok {
		return ""
	}
	return n
}

func formatValid(normalized, s string) bool { return formats[normalized](s) }

// lazyRegexp returns the expression of pattern p, compiled at the first
// call: only a CRD's schema with a format needs them, and compiled at
// package init they were the largest init allocation of every server
// (0.5 MB, GODEBUG=inittrace=1; TestInitCompilesNoFormat).
func lazyRegexp(p string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(p) })
}

func rxMatch(p string) func(string) bool {
	re := lazyRegexp(p)
	return func(s string) bool { return re().MatchString(s) }
}

var (
	rxSSN       = lazyRegexp(`^\d{3}[- ]?\d{2}[- ]?\d{4}$`)
	rxHostname  = lazyRegexp(`^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$`)
	rxDateTime  = lazyRegexp(`^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$`)
	rxDuration  = lazyRegexp(`((\d+)\s*([A-Za-zµ]+))`)
	rxCard      = lazyRegexp(`^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$`)
	rxShortName = lazyRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	rxLongName  = lazyRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	rxSpaceDash = lazyRegexp(`[\s-]+`)
)

func isURI(s string) bool {
	_, err := url.ParseRequestURI(s)
	return err == nil
}

func isEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address != ""
}

// isHostname is RFC 1034's host name with the length limits of its labels
// and the whole, as go-openapi's strfmt checks it.
func isHostname(s string) bool {
	if len(s) > 255 || !rxHostname().MatchString(s) {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) > 63 {
			return false
		}
	}
	return true
}

// parseIPSloppy parses an IP address allowing leading zeros in IPv4
// octets, as Kubernetes' netutils.ParseIPSloppy does for formats.
func parseIPSloppy(s string) net.IP {
	if ip := net.ParseIP(s); ip != nil {
		return ip
	}
	if strings.Contains(s, ":") {
		return nil
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	for i, p := range parts {
		t := strings.TrimLeft(p, "0")
		if t == "" && p != "" {
			t = "0"
		}
		parts[i] = t
	}
	return net.ParseIP(strings.Join(parts, "."))
}

func isCIDR(s string) bool {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return false
	}
	ip := parseIPSloppy(s[:i])
	if ip == nil {
		return false
	}
	_, _, err := net.ParseCIDR(ip.String() + s[i:])
	return err == nil
}

func isDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// isDateTime is go-openapi's check: a full date, "t", then a time with an
// optional fraction and a zone, case-insensitively.
func isDateTime(s string) bool {
	if len(s) < 4 {
		return false
	}
	parts := strings.Split(strings.ToLower(s), "t")
	if len(parts) < 2 || !isDate(parts[0]) {
		return false
	}
	m := rxDateTime().FindStringSubmatch(parts[1])
	if m == nil {
		return false
	}
	return m[1] <= "23" && m[2] <= "59" && m[3] <= "59"
}

// durationUnits are the unit spellings go-openapi's duration format
// knows besides Go's own: each group's last spelling also matches as a
// prefix ("hours", "seconds").
var durationUnits = [][]string{
	{"ns", "nano"}, {"us", "µs", "micro"}, {"ms", "milli"}, {"s", "sec"},
	{"m", "min"}, {"h", "hr", "hour"}, {"d", "day"}, {"w", "wk", "week"},
}

// isDuration is go-openapi's: a Go duration, or any number-and-unit pair
// found in the string (kube-openapi does not anchor its match).
func isDuration(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	ok := false
	for _, m := range rxDuration().FindAllStringSubmatch(s, -1) {
		if _, err := strconv.Atoi(m[2]); err != nil {
			return false
		}
		unit := strings.ToLower(strings.TrimSpace(m[3]))
		for _, group := range durationUnits {
			last := len(group) - 1
			for i, v := range group {
				if (i == last && strings.HasPrefix(unit, v)) || strings.EqualFold(v, unit) {
					ok = true
				}
			}
		}
	}
	return ok
}

func digitsOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isISBN10(s string) bool {
	s = rxSpaceDash().ReplaceAllString(s, "")
	if len(s) != 10 {
		return false
	}
	sum := 0
	for i, r := range s {
		var d int
		switch {
		case r >= '0' && r <= '9':
			d = int(r - '0')
		case r == 'X' && i == 9:
			d = 10
		default:
			return false
		}
		sum += (i + 1) * d
	}
	return sum%11 == 0
}

func isISBN13(s string) bool {
	s = rxSpaceDash().ReplaceAllString(s, "")
	if len(s) != 13 {
		return false
	}
	sum := 0
	for i, r := range s {
		if r < '0' || r > '9' {
			return false
		}
		f := 1
		if i%2 == 1 {
			f = 3
		}
		sum += f * int(r-'0')
	}
	return sum%10 == 0
}

// isCreditCard strips what is not a digit, then checks the issuers'
// number patterns and the Luhn sum, as govalidator does.
func isCreditCard(s string) bool {
	d := digitsOnly(s)
	if !rxCard().MatchString(d) {
		return false
	}
	sum, double := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		n := int(d[i] - '0')
		if double {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
		double = !double
	}
	return sum%10 == 0
}
