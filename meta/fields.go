package meta

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Field selectors, in the grammar of k8s.io/apimachinery/pkg/fields: terms
// "field=value", "field==value" or "field!=value" joined by commas. The field
// is taken literally up to the first operator (no blanks are trimmed, no
// escapes apply); in the value, '\', ',' and '=' must be escaped with a
// backslash. A missing field reads as "", so "spec.x=" selects objects
// without spec.x and "spec.x!=" those with a non-empty one.

// fieldTerm is one term of a field selector.
type fieldTerm struct {
	field, value string
	not          bool // "!=" rather than "="
}

// fieldSelector is a non-empty list of terms, all of which must hold, in
// the order of their String forms.
type fieldSelector []fieldTerm

func (s fieldSelector) Matches(set Set) bool {
	for i := range s {
		if (set[s[i].field] == s[i].value) == s[i].not {
			return false
		}
	}
	return true
}

func (s fieldSelector) Empty() bool { return len(s) == 0 }

func (s fieldSelector) String() string {
	var b strings.Builder
	for i := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		s[i].write(&b)
	}
	return b.String()
}

// RequiresExactMatch returns the value of the first "field=value" term on
// field.
func (s fieldSelector) RequiresExactMatch(field string) (string, bool) {
	for i := range s {
		if s[i].field == field && !s[i].not {
			return s[i].value, true
		}
	}
	return "", false
}

func (t *fieldTerm) write(b *strings.Builder) {
	b.WriteString(t.field)
	if t.not {
		b.WriteString("!=")
	} else {
		b.WriteByte('=')
	}
	b.WriteString(EscapeFieldValue(t.value))
}

// String returns the canonical form of the term.
func (t *fieldTerm) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

// fieldValueEscaper escapes the backslash first so that the escapes it adds
// are not escaped again.
var fieldValueEscaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `=`, `\=`)

// EscapeFieldValue escapes s for use as the value of a field selector term,
// as Kubernetes' fields.EscapeValue does: '\' becomes `\\`, ',' `\,` and
// '=' `\=`.
func EscapeFieldValue(s string) string { return fieldValueEscaper.Replace(s) }

// UnescapeFieldValue reverses EscapeFieldValue, with the errors of
// Kubernetes' fields.UnescapeValue: an unknown escape or a trailing
// backslash is "invalid field selector: invalid escape sequence: \x", and an
// unescaped ',' or '=' is "invalid field selector: unescaped character in
// value: 61" (Kubernetes prints the character's code point, not the
// character).
//
// Unlike Kubernetes, which decodes the value as UTF-8 when it holds an
// escape and so replaces invalid bytes with U+FFFD, bytes other than the
// escapes are kept as they are.
func UnescapeFieldValue(s string) (string, error) {
	if !strings.ContainsAny(s, `\,=`) {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return "", fmt.Errorf(`invalid field selector: invalid escape sequence: \`)
			}
			i++
			switch n := s[i]; n {
			case '\\', ',', '=':
				b = append(b, n)
			default:
				r, _ := utf8.DecodeRuneInString(s[i:])
				return "", fmt.Errorf(`invalid field selector: invalid escape sequence: \%c`, r)
			}
		case ',', '=':
			return "", fmt.Errorf("invalid field selector: unescaped character in value: %d", c)
		default:
			b = append(b, c)
		}
	}
	return string(b), nil
}

// splitFieldTerms splits s at the commas that no backslash escapes. The
// terms keep their escapes.
func splitFieldTerms(s string) []string {
	if s == "" {
		return nil
	}
	terms := make([]string, 0, 1+strings.Count(s, ","))
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // whatever follows is escaped, a comma included
		case ',':
			terms = append(terms, s[start:i])
			start = i + 1
		}
	}
	return append(terms, s[start:])
}

// splitFieldTerm cuts a term at its first operator. "!=" and "==" are tried
// before "=" at each position, so "a!=b" is a != term and "a==b" does not
// leave "=b" as the value.
func splitFieldTerm(term string) (field, op, value string, ok bool) {
	for i := 0; i < len(term); i++ {
		switch {
		case strings.HasPrefix(term[i:], "!="):
			return term[:i], "!=", term[i+2:], true
		case strings.HasPrefix(term[i:], "=="):
			return term[:i], "==", term[i+2:], true
		case term[i] == '=':
			return term[:i], "=", term[i+1:], true
		}
	}
	return "", "", "", false
}

// ParseFieldSelector parses a field selector such as
// "metadata.name=web,status.phase!=Running". The empty string selects
// everything, as does a term with neither field nor value ("="), which
// Kubernetes drops too. Errors read as Kubernetes':
//
//	invalid selector: 'a'; can't understand 'a'
//
// Terms are checked in sorted order, as Kubernetes does, so the first error
// reported is the same. The selector's String writes each term as
// field=value or field!=value with the value re-escaped, in sorted order.
func ParseFieldSelector(s string) (Selector, error) {
	raw := splitFieldTerms(s)
	slices.Sort(raw)
	type parsed struct {
		term  fieldTerm
		canon string // the term's String, the sort key
	}
	terms := make([]parsed, 0, len(raw))
	for _, part := range raw {
		if part == "" {
			continue
		}
		field, op, escaped, ok := splitFieldTerm(part)
		if !ok {
			return nil, fmt.Errorf("invalid selector: '%s'; can't understand '%s'", s, part)
		}
		value, err := UnescapeFieldValue(escaped)
		if err != nil {
			return nil, err
		}
		if field == "" && value == "" {
			continue
		}
		// A valid value is escaped exactly as EscapeFieldValue would, so
		// the canonical form is the term itself unless it used "==".
		canon := part
		if op == "==" {
			canon = field + "=" + escaped
		}
		terms = append(terms, parsed{fieldTerm{field: field, value: value, not: op == "!="}, canon})
	}
	if len(terms) == 0 {
		return Everything(), nil
	}
	// Sorting by the canonical form, not the input, keeps "a==z,a=b" and
	// its String "a=b,a=z" equal selectors.
	slices.SortStableFunc(terms, func(a, b parsed) int { return strings.Compare(a.canon, b.canon) })
	sel := make(fieldSelector, len(terms))
	for i := range terms {
		sel[i] = terms[i].term
	}
	return sel, nil
}

// FieldSelectorFromSet returns the field selector that requires every field
// of s to have its value (field=value for each entry). An empty set, or
// one whose only entry has an empty name and value, gives Everything.
func FieldSelectorFromSet(s Set) Selector {
	sel := make(fieldSelector, 0, len(s))
	for f, v := range s {
		if f == "" && v == "" {
			continue // matches every set, and "=" would parse to Everything
		}
		sel = append(sel, fieldTerm{field: f, value: v})
	}
	if len(sel) == 0 {
		return Everything()
	}
	slices.SortFunc(sel, func(a, b fieldTerm) int { return strings.Compare(a.String(), b.String()) })
	return sel
}

// SelectorFields returns the field names a field selector made by
// ParseFieldSelector or FieldSelectorFromSet constrains, in its order (a
// name may repeat). It is how a server checks that every field is one it
// can select on. It returns nil for any other selector.
func SelectorFields(sel Selector) []string {
	fs, ok := sel.(fieldSelector)
	if !ok {
		return nil
	}
	out := make([]string, len(fs))
	for i := range fs {
		out[i] = fs[i].field
	}
	return out
}
