// Package jsonw appends JSON by hand, byte for byte as encoding/json
// writes it with HTML escaping off, for the answers and webhook bodies
// written on every job, where encoding/json's reflection was a share of
// the CPU (BENCHMARKS.md, issue 35).
package jsonw

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it with HTML escaping off: a quote, a backslash and control
// characters escaped, each invalid UTF-8 byte as U+FFFD, and U+2028 and
// U+2029, which JavaScript takes as line ends, as \u escapes.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// AppendRaw appends raw, a JSON value, compacted, as encoding/json writes
// a json.RawMessage; "null" when raw is empty. It reports false, having
// appended part of it, when raw is not JSON, which encoding/json refuses
// in its own words.
func AppendRaw(b []byte, raw []byte) ([]byte, bool) {
	if len(raw) == 0 {
		return append(b, "null"...), true
	}
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, raw) != nil {
		return b, false
	}
	return buf.Bytes(), true
}

// TimeLayout is how toc writes a time: RFC 3339 in UTC, to the
// millisecond ("2026-11-30T07:00:00.123Z").
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendTime appends t in UTC as t.UTC().AppendFormat(b, TimeLayout)
// does, unquoted. A year of four digits, every time toc keeps, is written
// digit by digit: AppendFormat's walk of the layout was a tenth of the CPU
// of a schedule's answer, which writes three times, and a webhook two
// (BenchmarkAppendTime). Any other year goes to AppendFormat.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	hour, minute, second := t.Clock()
	milli := t.Nanosecond() / int(time.Millisecond)
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-')
	b = append(b, byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T')
	b = append(b, byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':')
	b = append(b, byte('0'+second/10), byte('0'+second%10), '.')
	return append(b, byte('0'+milli/100), byte('0'+milli/10%10), byte('0'+milli%10), 'Z')
}
