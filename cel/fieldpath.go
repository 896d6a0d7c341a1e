package cel

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// validFieldPath checks a rule's fieldPath against the schema it is
// declared on and returns it normalized, as kube's ValidFieldPath does: a
// JSON path of .field and ['key'] steps through properties and maps only.
func validFieldPath(jsonPath string, s *schema.Schema) (*meta.Path, error) {
	var p *meta.Path
	step := func(name string) error {
		switch {
		case len(s.Properties) > 0:
			c, ok := s.Property(name)
			if !ok {
				return errors.New("does not refer to a valid field")
			}
			if p == nil {
				p = meta.NewPath(name)
			} else {
				p = p.Child(name)
			}
			s = c
		case s.AdditionalProperties != nil:
			if p == nil {
				p = &meta.Path{}
			}
			p = p.Key(name)
			s = s.AdditionalProperties
		default:
			return errors.New("does not refer to a valid field")
		}
		return nil
	}
	rest := jsonPath
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[]")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, errors.New("unexpected end of JSON path")
			}
			if err := step(rest[:end]); err != nil {
				return nil, err
			}
			rest = rest[end:]
		case '[':
			rest = rest[1:]
			if rest == "" || rest[0] != '\'' {
				return nil, fmt.Errorf("expected single quoted string but got %s", rest)
			}
			end := closingQuote(rest)
			if end < 0 {
				return nil, fmt.Errorf("expected single quoted string but got %s", rest)
			}
			key, err := unescapeSingleQuote(rest[1:end])
			if err != nil {
				return nil, fmt.Errorf("invalid string literal: %w", err)
			}
			rest = rest[end+1:]
			if rest == "" || rest[0] != ']' {
				return nil, errors.New("unexpected end of JSON path")
			}
			rest = rest[1:]
			if err := step(key); err != nil {
				return nil, err
			}
		default:
			tok := rest
			if i := strings.IndexAny(rest, ".[]"); i > 0 {
				tok = rest[:i]
			}
			return nil, fmt.Errorf("expected [ or . but got: %s", tok)
		}
	}
	return p, nil
}

// closingQuote finds the quote that ends a single-quoted string starting
// at s[0], skipping escaped quotes.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		if s[i] == '\'' && s[i-1] != '\\' {
			return i
		}
	}
	return -1
}

func unescapeSingleQuote(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\'', '\\':
			b.WriteByte(s[i])
		default:
			return "", fmt.Errorf("invalid escape char \\%c", s[i])
		}
	}
	return b.String(), nil
}
