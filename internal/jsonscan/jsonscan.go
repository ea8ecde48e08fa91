// Package jsonscan reads JSON without reflection, for the bodies read on
// every job: a job request in toc (http/jobfast.go) and a job in the Go
// client's answers (http/client). It reads the plain forms those take
// (strings without escapes, integers, values kept as they came) and
// reports false for anything else, which its callers leave to
// encoding/json: a fast path beside it, never instead of it. Each caller
// has a fuzz test holding the two to the same value.
//
// It imports the standard library only, as the client must.
package jsonscan

import (
	"encoding/json"
	"math"
	"unicode/utf8"
)

// Scanner reads the JSON in a byte slice from its start. Each method
// reads one thing after any spaces and reports whether it was there in
// its plain form; after false, the Scanner is of no further use.
type Scanner struct {
	b []byte
	i int
}

// New returns a Scanner of data, or false when data is not valid UTF-8
// (encoding/json would replace the bad bytes; a string read here is its
// bytes as they are).
func New(data []byte) (*Scanner, bool) {
	return &Scanner{b: data}, utf8.Valid(data)
}

func (s *Scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// next passes over c after spaces.
func (s *Scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// End reports whether only spaces are left.
func (s *Scanner) End() bool {
	s.space()
	return s.i == len(s.b)
}

// Object reads an object, handing each key to member, which reads its
// value. The key's bytes are the data's: member must not keep them.
func (s *Scanner) Object(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		key, ok := s.Bytes()
		if !ok || !s.next(':') || !member(key) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// Array reads an array, element reading each element.
func (s *Scanner) Array(element func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !element() {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// Bytes reads a string without escapes or control characters, and
// returns its bytes in the data.
func (s *Scanner) Bytes() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// String reads a string as Bytes does into v.
func (s *Scanner) String(v *string) bool {
	b, ok := s.Bytes()
	*v = string(b)
	return ok
}

// Bool reads true or false into v.
func (s *Scanner) Bool(v *bool) bool {
	switch {
	case s.literal("true"):
		*v = true
	case s.literal("false"):
		*v = false
	default:
		return false
	}
	return true
}

// Null reads null, and reports whether it was there; false leaves the
// Scanner where it was, to read the value that is.
func (s *Scanner) Null() bool { return s.literal("null") }

func (s *Scanner) literal(word string) bool {
	s.space()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// digits reads a run of digits without a leading zero (but "0") as an
// unsigned number no greater than limit, which is not followed by a
// fraction or an exponent.
func (s *Scanner) digits(limit uint64) (uint64, bool) {
	start := s.i
	var n uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		d := uint64(s.b[s.i] - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
		s.i++
	}
	switch {
	case s.i == start, s.b[start] == '0' && s.i-start > 1:
		return 0, false
	case s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E'):
		return 0, false
	}
	return n, true
}

// Int reads an integer within [lo, hi] into v.
func (s *Scanner) Int(v *int64, lo, hi int64) bool {
	s.space()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	n, ok := s.digits(limit)
	if !ok {
		return false
	}
	x := int64(n) // 2^63 wraps to math.MinInt64, which the minus keeps
	if neg {
		x = -x
	}
	*v = x
	return x >= lo && x <= hi
}

// Uint reads an unsigned integer, digits alone or in quotes (as the API
// writes ids), into v.
func (s *Scanner) Uint(v *uint64) bool {
	s.space()
	quoted := s.i < len(s.b) && s.b[s.i] == '"'
	if quoted {
		s.i++
	}
	n, ok := s.digits(math.MaxUint64)
	if !ok {
		return false
	}
	if quoted { // the closing quote right after the digits
		if s.i == len(s.b) || s.b[s.i] != '"' {
			return false
		}
		s.i++
	}
	*v = n
	return true
}

// Value reads any JSON value and returns its bytes in the data, as
// encoding/json hands them to a json.RawMessage: checked, not compacted.
func (s *Scanner) Value() ([]byte, bool) {
	s.space()
	start := s.i
	if s.i == len(s.b) {
		return nil, false
	}
	switch s.b[s.i] {
	case '{', '[':
		for depth := 0; s.i < len(s.b); {
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
	case '"':
		s.skipString()
	default: // a number, true, false or null
		for s.i < len(s.b) && !isEnd(s.b[s.i]) {
			s.i++
		}
	}
	if s.i > len(s.b) || s.i == start {
		return nil, false // a string not closed, or nothing
	}
	raw := s.b[start:s.i]
	return raw, json.Valid(raw)
}

// isEnd reports whether c ends a number or a literal.
func isEnd(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// skipString passes over the string at i, escapes and all, unchecked.
func (s *Scanner) skipString() {
	for s.i++; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			s.i++
		}
	}
	s.i++
}
