package meta

import (
	"fmt"
	"slices"
	"strings"
)

// Label selectors, in the grammar of k8s.io/apimachinery/pkg/labels:
//
//	<selector>    ::= "" | <requirement> { "," <requirement> }
//	<requirement> ::= [ "!" ] KEY
//	                | KEY ( "=" | "==" | "!=" | ">" | "<" ) [ VALUE ]
//	                | KEY ( "in" | "notin" ) "(" [ VALUE { "," [ VALUE ] } ] ")"
//
// KEY is a qualified name and VALUE a label value (ValidateQualifiedName,
// ValidateLabelValue); blanks (space, tab, CR, LF) may surround any token.
// A missing VALUE is the empty value. Error messages are Kubernetes' own,
// since kubectl users see them verbatim.

// labelOp is the operator of one label requirement.
type labelOp uint8

const (
	labelEquals labelOp = iota + 1
	labelDoubleEquals
	labelNotEquals
	labelIn
	labelNotIn
	labelExists
	labelDoesNotExist
	labelGreaterThan
	labelLessThan
)

// labelRequirement is one comma-separated term of a label selector.
type labelRequirement struct {
	key string
	op  labelOp
	// values are sorted and unique; the exact-match and comparison operators
	// have exactly one, Exists and DoesNotExist none.
	values []string
	// bound is values[0] parsed, for labelGreaterThan and labelLessThan.
	bound int64
}

// labelSelector is a non-empty list of requirements, all of which must hold,
// sorted by key (stably, so the input order of one key's requirements stays).
type labelSelector []labelRequirement

func (s labelSelector) Matches(set Set) bool {
	for i := range s {
		if !s[i].matches(set) {
			return false
		}
	}
	return true
}

func (s labelSelector) Empty() bool { return len(s) == 0 }

func (s labelSelector) String() string {
	var b strings.Builder
	for i := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		s[i].write(&b)
	}
	return b.String()
}

// RequiresExactMatch looks only at the first requirement on key, as
// Kubernetes does; "in" with a single value counts as an exact match.
func (s labelSelector) RequiresExactMatch(key string) (string, bool) {
	for i := range s {
		if s[i].key != key {
			continue
		}
		switch s[i].op {
		case labelEquals, labelDoubleEquals, labelIn:
			if len(s[i].values) == 1 {
				return s[i].values[0], true
			}
		}
		return "", false
	}
	return "", false
}

func (r *labelRequirement) matches(set Set) bool {
	v, ok := set[r.key]
	switch r.op {
	case labelEquals, labelDoubleEquals, labelIn:
		return ok && r.hasValue(v)
	case labelNotEquals, labelNotIn:
		// A missing label is "not equal" to anything, as in Kubernetes.
		return !ok || !r.hasValue(v)
	case labelExists:
		return ok
	case labelDoesNotExist:
		return !ok
	case labelGreaterThan, labelLessThan:
		if !ok {
			return false
		}
		n, valid := parseInt64(v)
		if !valid {
			return false
		}
		if r.op == labelGreaterThan {
			return n > r.bound
		}
		return n < r.bound
	}
	return false
}

func (r *labelRequirement) hasValue(v string) bool {
	if len(r.values) == 1 {
		return r.values[0] == v
	}
	_, found := slices.BinarySearch(r.values, v)
	return found
}

func (r *labelRequirement) write(b *strings.Builder) {
	switch r.op {
	case labelExists:
		b.WriteString(r.key)
		return
	case labelDoesNotExist:
		b.WriteByte('!')
		b.WriteString(r.key)
		return
	case labelIn, labelNotIn:
		b.WriteString(r.key)
		if r.op == labelIn {
			b.WriteString(" in (")
		} else {
			b.WriteString(" notin (")
		}
		for i, v := range r.values {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(v)
		}
		b.WriteByte(')')
		return
	}
	b.WriteString(r.key)
	b.WriteString(r.op.symbol())
	b.WriteString(r.values[0])
}

func (op labelOp) symbol() string {
	switch op {
	case labelEquals:
		return "="
	case labelDoubleEquals:
		return "=="
	case labelNotEquals:
		return "!="
	case labelGreaterThan:
		return ">"
	case labelLessThan:
		return "<"
	case labelIn:
		return "in"
	case labelNotIn:
		return "notin"
	case labelExists:
		return "exists"
	case labelDoesNotExist:
		return "!"
	}
	return "?"
}

// parseInt64 is strconv.ParseInt(s, 10, 64) without the error value, which
// would allocate: Matches runs once per object per watcher.
func parseInt64(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(n), true // -(1<<63) wraps to itself, which is right
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// newLabelRequirement checks a requirement as Kubernetes' NewRequirement
// does, with its field paths ("key", "values[0][key]") and aggregate form.
// values are sorted and deduplicated in place. A parser that validated the
// key itself (with its own message) passes keyChecked.
func newLabelRequirement(key string, op labelOp, values []string, keyChecked bool) (labelRequirement, error) {
	var errs FieldErrors
	if !keyChecked {
		if msgs := ValidateQualifiedName(key); len(msgs) > 0 {
			errs = append(errs, Invalid(NewPath("key"), key, strings.Join(msgs, "; ")))
		}
	}
	r := labelRequirement{key: key, op: op}
	valuesPath := NewPath("values")
	switch op {
	case labelIn, labelNotIn:
		if len(values) == 0 {
			errs = append(errs, Invalid(valuesPath, values, "for 'in', 'notin' operators, values set can't be empty"))
		}
	case labelEquals, labelDoubleEquals, labelNotEquals:
		if len(values) != 1 {
			errs = append(errs, Invalid(valuesPath, values, "exact-match compatibility requires one single value"))
		}
	case labelExists, labelDoesNotExist:
		if len(values) != 0 {
			errs = append(errs, Invalid(valuesPath, values, "values set must be empty for exists and does not exist"))
		}
	case labelGreaterThan, labelLessThan:
		if len(values) != 1 {
			errs = append(errs, Invalid(valuesPath, values, "for 'Gt', 'Lt' operators, exactly one value is required"))
		}
		for i, v := range values {
			n, ok := parseInt64(v)
			if !ok {
				errs = append(errs, Invalid(valuesPath.Index(i), v, "for 'Gt', 'Lt' operators, the value must be an integer"))
			}
			r.bound = n
		}
	}
	for i, v := range values {
		if msgs := ValidateLabelValue(v); len(msgs) > 0 {
			errs = append(errs, Invalid(valuesPath.Index(i).Key(key), v, strings.Join(msgs, "; ")))
		}
	}
	if len(errs) > 0 {
		return labelRequirement{}, errs
	}
	r.values = sortedSet(values)
	return r, nil
}

// sortedSet sorts and deduplicates values in place. The parser applies it
// before validation because Kubernetes does, so the index in an error such
// as "values[1][key]" is the same.
func sortedSet(values []string) []string {
	if len(values) < 2 {
		return values
	}
	slices.Sort(values)
	return slices.Compact(values)
}

// newLabelSelector sorts reqs by key into a selector; no requirements is
// Everything.
func newLabelSelector(reqs []labelRequirement) Selector {
	if len(reqs) == 0 {
		return Everything()
	}
	slices.SortStableFunc(reqs, func(a, b labelRequirement) int { return strings.Compare(a.key, b.key) })
	return labelSelector(reqs)
}

// SelectorFromSet returns the label selector that requires every label of s
// with its value (k=v for each entry, sorted by key). Like Kubernetes, it
// does not validate s: a set with an invalid key or value yields a selector
// whose String does not parse. An empty set gives Everything.
func SelectorFromSet(s Set) Selector {
	if len(s) == 0 {
		return Everything()
	}
	reqs := make([]labelRequirement, 0, len(s))
	for k, v := range s {
		reqs = append(reqs, labelRequirement{key: k, op: labelEquals, values: []string{v}})
	}
	return newLabelSelector(reqs)
}

// ParseLabelSelector parses a label selector such as
// "app=web,tier!=db,env in (prod,staging),!canary,replicas>2". The empty
// string selects everything. Errors read as Kubernetes', for instance
//
//	unable to parse requirement: <nil>: Invalid value: "-x": name part must consist of ...
//
// The selector's String lists the requirements sorted by key, the values of
// "in" and "notin" sorted and deduplicated.
//
// One deliberate difference from k8s.io/apimachinery: its lexer takes a NUL
// byte for the end of input and ignores what follows; here NUL is an
// ordinary byte, which no key or value may contain.
func ParseLabelSelector(s string) (Selector, error) {
	p := labelParser{lex: labelLexer{s: s}}
	var reqs []labelRequirement
	if s != "" {
		// Each requirement but the last ends at a comma: one allocation
		// instead of growing the slice.
		reqs = make([]labelRequirement, 0, strings.Count(s, ",")+1)
	}
	for {
		switch tok, lit := p.peek(true); tok {
		case tokEnd:
			return newLabelSelector(reqs), nil
		case tokIdent, tokBang:
		default:
			return nil, fmt.Errorf("found '%s', expected: !, identifier, or 'end of string'", lit)
		}
		r, err := p.requirement()
		if err != nil {
			return nil, fmt.Errorf("unable to parse requirement: %w", err)
		}
		reqs = append(reqs, r)
		switch tok, lit := p.next(true); tok {
		case tokEnd:
			return newLabelSelector(reqs), nil
		case tokComma:
			if tok, lit := p.peek(true); tok != tokIdent && tok != tokBang {
				return nil, fmt.Errorf("found '%s', expected: identifier after ','", lit)
			}
		default:
			return nil, fmt.Errorf("found '%s', expected: ',' or 'end of string'", lit)
		}
	}
}

// labelToken is a token of the label selector grammar.
type labelToken uint8

const (
	tokEnd labelToken = iota
	tokIdent
	tokIn
	tokNotIn
	tokOpenPar
	tokClosePar
	tokComma
	tokBang
	tokEquals
	tokDoubleEquals
	tokNotEquals
	tokGreater
	tokLess
)

// labelLexer splits a selector into tokens. Literals are substrings of the
// input, so lexing allocates nothing.
type labelLexer struct {
	s   string
	pos int
}

func isLabelBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isLabelSymbol(c byte) bool {
	switch c {
	case '=', '!', '(', ')', ',', '>', '<':
		return true
	}
	return false
}

func (l *labelLexer) scan() (labelToken, string) {
	for l.pos < len(l.s) && isLabelBlank(l.s[l.pos]) {
		l.pos++
	}
	if l.pos == len(l.s) {
		return tokEnd, ""
	}
	start := l.pos
	c := l.s[l.pos]
	if isLabelSymbol(c) {
		l.pos++
		// "==" and "!=" are the only two-symbol tokens; any other run of
		// symbols ("=!", ">=") is several tokens, as in Kubernetes.
		if (c == '=' || c == '!') && l.pos < len(l.s) && l.s[l.pos] == '=' {
			l.pos++
			if c == '=' {
				return tokDoubleEquals, "=="
			}
			return tokNotEquals, "!="
		}
		switch c {
		case '=':
			return tokEquals, "="
		case '!':
			return tokBang, "!"
		case '(':
			return tokOpenPar, "("
		case ')':
			return tokClosePar, ")"
		case ',':
			return tokComma, ","
		case '>':
			return tokGreater, ">"
		default:
			return tokLess, "<"
		}
	}
	for l.pos < len(l.s) && !isLabelSymbol(l.s[l.pos]) && !isLabelBlank(l.s[l.pos]) {
		l.pos++
	}
	lit := l.s[start:l.pos]
	switch lit {
	case "in":
		return tokIn, lit
	case "notin":
		return tokNotIn, lit
	}
	return tokIdent, lit
}

// labelParser reads requirements with one token of lookahead.
type labelParser struct {
	lex    labelLexer
	peeked bool
	tok    labelToken
	lit    string
}

// peek returns the next token without consuming it. Where a key or value
// may stand (inValue), the keywords "in" and "notin" are identifiers, so
// "in in (in)" is a valid selector.
func (p *labelParser) peek(inValue bool) (labelToken, string) {
	if !p.peeked {
		p.tok, p.lit = p.lex.scan()
		p.peeked = true
	}
	if inValue && (p.tok == tokIn || p.tok == tokNotIn) {
		return tokIdent, p.lit
	}
	return p.tok, p.lit
}

// next consumes the next token; see peek for inValue.
func (p *labelParser) next(inValue bool) (labelToken, string) {
	tok, lit := p.peek(inValue)
	p.peeked = false
	return tok, lit
}

func (p *labelParser) requirement() (labelRequirement, error) {
	tok, lit := p.next(true)
	negated := tok == tokBang
	if negated {
		tok, lit = p.next(true)
	}
	if tok != tokIdent {
		return labelRequirement{}, fmt.Errorf("found '%s', expected: identifier", lit)
	}
	key := lit
	if msgs := ValidateQualifiedName(key); len(msgs) > 0 {
		// Kubernetes validates the key here with a nil field path, which
		// it prints as "<nil>"; users know the message in that form.
		return labelRequirement{}, &FieldError{Type: FieldValueInvalid, Field: "<nil>", BadValue: key, Detail: strings.Join(msgs, "; ")}
	}
	if negated {
		return newLabelRequirement(key, labelDoesNotExist, nil, true)
	}
	if tok, _ := p.peek(true); tok == tokEnd || tok == tokComma {
		return newLabelRequirement(key, labelExists, nil, true)
	}
	var op labelOp
	switch tok, lit := p.next(false); tok {
	case tokIn:
		op = labelIn
	case tokNotIn:
		op = labelNotIn
	case tokEquals:
		op = labelEquals
	case tokDoubleEquals:
		op = labelDoubleEquals
	case tokNotEquals:
		op = labelNotEquals
	case tokGreater:
		op = labelGreaterThan
	case tokLess:
		op = labelLessThan
	default:
		return labelRequirement{}, fmt.Errorf("found '%s', expected: in, notin, =, ==, !=, gt, lt", lit)
	}
	var values []string
	var err error
	if op == labelIn || op == labelNotIn {
		values, err = p.valueSet()
	} else {
		values, err = p.exactValue()
	}
	if err != nil {
		return labelRequirement{}, err
	}
	return newLabelRequirement(key, op, values, true)
}

// exactValue reads the value after =, ==, !=, > or <; none is "".
func (p *labelParser) exactValue() ([]string, error) {
	if tok, _ := p.peek(true); tok == tokEnd || tok == tokComma {
		return []string{""}, nil
	}
	tok, lit := p.next(true)
	if tok != tokIdent {
		return nil, fmt.Errorf("found '%s', expected: identifier", lit)
	}
	return []string{lit}, nil
}

// valueSet reads "(a,b,...)". Empty entries are the empty value: "()",
// "(,a)" and "(a,,b)" all contain "".
func (p *labelParser) valueSet() ([]string, error) {
	if tok, lit := p.next(true); tok != tokOpenPar {
		return nil, fmt.Errorf("found '%s' expected: '('", lit)
	}
	switch tok, lit := p.peek(true); tok {
	case tokClosePar:
		p.next(true)
		return []string{""}, nil
	case tokIdent, tokComma:
	default:
		return nil, fmt.Errorf("found '%s', expected: ',', ')' or identifier", lit)
	}
	var values []string
	for {
		switch tok, lit := p.next(true); tok {
		case tokIdent:
			values = append(values, lit)
			switch tok, lit := p.peek(true); tok {
			case tokComma:
			case tokClosePar:
				p.next(true)
				return sortedSet(values), nil
			default:
				return nil, fmt.Errorf("found '%s', expected: ',' or ')'", lit)
			}
		case tokComma:
			if len(values) == 0 {
				values = append(values, "") // "(,"
			}
			switch tok, _ := p.peek(true); tok {
			case tokClosePar:
				p.next(true)
				return sortedSet(append(values, "")), nil // ",)"
			case tokComma:
				p.next(true)
				values = append(values, "") // ",,"
			}
		default:
			return nil, fmt.Errorf("found '%s', expected: ',', or identifier", lit)
		}
	}
}
