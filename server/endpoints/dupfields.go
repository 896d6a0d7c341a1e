package endpoints

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// duplicateFields returns the paths of the keys that appear more than once
// in one object of data, in the order they repeat: "metadata.name",
// "spec.items[1].port". data must be valid JSON (it was decoded before).
// Besides what it reports, the scan allocates its path once, and more only
// for objects of over 16 keys or paths over 8 deep. Kubernetes' strict
// decoding reports these as it reports unknown fields; encoding/json keeps
// the last value silently.
func duplicateFields(data []byte) []string {
	var depth [8]pathElem // deeper paths grow it on the heap
	s := dupScanner{data: data, path: depth[:0]}
	s.value()
	return s.dups
}

type dupScanner struct {
	data []byte
	pos  int
	// path is where the scan is: object keys and array indexes, made into
	// a string only for a duplicate.
	path []pathElem
	dups []string
}

type pathElem struct {
	key   []byte // an object's key, or nil for an array index
	index int
}

// pathString renders the path with key appended, as "a.b[2].c".
func (s *dupScanner) pathString(key []byte) string {
	var b []byte
	for _, e := range s.path {
		if e.key == nil {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(e.index), 10)
			b = append(b, ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, e.key...)
	}
	if len(b) > 0 {
		b = append(b, '.')
	}
	return string(append(b, key...))
}

func (s *dupScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// value scans one value at s.pos.
func (s *dupScanner) value() {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return
	}
	switch s.data[s.pos] {
	case '{':
		s.object()
	case '[':
		s.array()
	case '"':
		s.str()
	default:
		// A number or a literal: up to the next delimiter.
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return
			}
			s.pos++
		}
	}
}

// str scans a string and returns its raw bytes (quotes excluded) and
// whether it holds an escape.
func (s *dupScanner) str() (raw []byte, escaped bool) {
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch s.data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			s.pos = i + 1
			return s.data[start:i], escaped
		}
	}
	s.pos = len(s.data)
	return s.data[start:], escaped
}

func (s *dupScanner) object() {
	s.pos++ // '{'
	var small [16][]byte
	keys := small[:0]
	for {
		s.skipSpace()
		if s.pos >= len(s.data) {
			return
		}
		if s.data[s.pos] == '}' {
			s.pos++
			return
		}
		if s.data[s.pos] == ',' {
			s.pos++
			continue
		}
		raw, escaped := s.str()
		key := raw
		if escaped || !utf8.Valid(raw) {
			// "a" and "\u0061" are one key, and so are two invalid
			// UTF-8 sequences (both U+FFFD): compare decoded forms.
			var k string
			if err := json.Unmarshal(s.data[s.pos-len(raw)-2:s.pos], &k); err == nil {
				key = []byte(k)
			}
		}
		dup := false
		for _, k := range keys {
			if bytes.Equal(k, key) {
				dup = true
				break
			}
		}
		if dup {
			s.dups = append(s.dups, s.pathString(key))
		} else {
			keys = append(keys, key)
		}
		s.skipSpace()
		if s.pos < len(s.data) && s.data[s.pos] == ':' {
			s.pos++
		}
		s.path = append(s.path, pathElem{key: key})
		s.value()
		s.path = s.path[:len(s.path)-1]
	}
}

func (s *dupScanner) array() {
	s.pos++ // '['
	for i := 0; ; {
		s.skipSpace()
		if s.pos >= len(s.data) {
			return
		}
		switch s.data[s.pos] {
		case ']':
			s.pos++
			return
		case ',':
			s.pos++
			i++
			continue
		}
		s.path = append(s.path, pathElem{index: i})
		s.value()
		s.path = s.path[:len(s.path)-1]
	}
}
