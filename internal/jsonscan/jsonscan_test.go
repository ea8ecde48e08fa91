package jsonscan

import (
	"math"
	"testing"
)

// The plain forms each method reads, and the edges it leaves to
// encoding/json. The callers' fuzz tests (http, http/client) hold whole
// bodies to encoding/json's reading of them.
func TestScanner(t *testing.T) {
	read := func(data string, f func(s *Scanner) bool) bool {
		s, ok := New([]byte(data))
		return ok && f(s) && s.End()
	}
	for _, tc := range []struct {
		data string
		want bool
		f    func(s *Scanner) bool
	}{
		{` "abc" `, true, func(s *Scanner) bool { var v string; return s.String(&v) && v == "abc" }},
		{`"a\"b"`, false, func(s *Scanner) bool { var v string; return s.String(&v) }},
		{"\"a\tb\"", false, func(s *Scanner) bool { var v string; return s.String(&v) }},
		{"\"\xff\"", false, func(s *Scanner) bool { var v string; return s.String(&v) }},
		{`"abc`, false, func(s *Scanner) bool { var v string; return s.String(&v) }},
		{`-9223372036854775808`, true, func(s *Scanner) bool {
			var v int64
			return s.Int(&v, math.MinInt64, math.MaxInt64) && v == math.MinInt64
		}},
		{`9223372036854775808`, false, func(s *Scanner) bool { var v int64; return s.Int(&v, math.MinInt64, math.MaxInt64) }},
		{`2147483648`, false, func(s *Scanner) bool { var v int64; return s.Int(&v, math.MinInt32, math.MaxInt32) }},
		{`-0`, true, func(s *Scanner) bool { var v int64; return s.Int(&v, 0, 0) && v == 0 }},
		{`01`, false, func(s *Scanner) bool { var v int64; return s.Int(&v, 0, 9) }},
		{`1e3`, false, func(s *Scanner) bool { var v int64; return s.Int(&v, 0, 9999) }},
		{`- 1`, false, func(s *Scanner) bool { var v int64; return s.Int(&v, -9, 9) }},
		{`"18446744073709551615"`, true, func(s *Scanner) bool { var v uint64; return s.Uint(&v) && v == math.MaxUint64 }},
		{`18446744073709551616`, false, func(s *Scanner) bool { var v uint64; return s.Uint(&v) }},
		{`"7 "`, false, func(s *Scanner) bool { var v uint64; return s.Uint(&v) }},
		{`true`, true, func(s *Scanner) bool { var v bool; return s.Bool(&v) && v }},
		{`null`, true, func(s *Scanner) bool { return s.Null() }},
		{`{"a":[1,"]}"],"b":{}}`, true, func(s *Scanner) bool { v, ok := s.Value(); return ok && string(v) == `{"a":[1,"]}"],"b":{}}` }},
		{`[1,2`, false, func(s *Scanner) bool { _, ok := s.Value(); return ok }},
		{`tru`, false, func(s *Scanner) bool { _, ok := s.Value(); return ok }},
		{`{"a":1,"b":[true,false]}`, true, func(s *Scanner) bool {
			var keys string
			return s.Object(func(k []byte) bool {
				keys += string(k)
				if string(k) == "b" {
					return s.Array(func() bool { var v bool; return s.Bool(&v) })
				}
				var v int64
				return s.Int(&v, 0, 9)
			}) && keys == "ab"
		}},
		{`{"a":1,}`, false, func(s *Scanner) bool { return s.Object(func([]byte) bool { var v int64; return s.Int(&v, 0, 9) }) }},
	} {
		if got := read(tc.data, tc.f); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.data, got, tc.want)
		}
	}
}
