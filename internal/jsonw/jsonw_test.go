package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzAppendString holds AppendString to encoding/json's escaping; its
// seeds hold every rune below U+0800 and every byte value.
func FuzzAppendString(f *testing.F) {
	var runes, bytes80 []byte // every rune below U+0800; every byte from 0x80, alone invalid
	for r := range rune(0x800) {
		runes = utf8.AppendRune(runes, r)
	}
	for c := 0x80; c <= 0xff; c++ {
		bytes80 = append(bytes80, byte(c))
	}
	f.Add("plain")
	f.Add(string(runes))
	f.Add(string(bytes80))
	f.Add("\u2027\u2028\u2029\u202a\uffff\U00010000\U0010ffff\xed\xa0\x80\xe2\x80")
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got := AppendString(nil, s)
		if !bytes.Equal(append(got, '\n'), want.Bytes()) {
			t.Fatalf("%q: got %s want %s", s, got, want.Bytes())
		}
		if !utf8.Valid(got) {
			t.Fatalf("%q: not UTF-8: %q", s, got)
		}
	})
}

// AppendRaw compacts as encoding/json writes a json.RawMessage, and
// refuses what is not JSON.
func TestAppendRaw(t *testing.T) {
	for _, raw := range []string{"", `{"a":1}`, " {\n \"a\" : [1, 2,\t\"<&>\"] }\n", `"\u2028 <b>"`, `null`, `12.5e3`} {
		want := "null"
		if raw != "" {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(json.RawMessage(raw)); err != nil {
				t.Fatal(err)
			}
			want = strings.TrimSuffix(buf.String(), "\n")
		}
		if got, ok := AppendRaw([]byte("x"), []byte(raw)); !ok || string(got) != "x"+want {
			t.Errorf("AppendRaw(%q) = %s, %v, want x%s", raw, got, ok, want)
		}
	}
	if got, ok := AppendRaw([]byte("x"), []byte(`{"a":`)); ok || string(got) != "x" {
		t.Errorf("AppendRaw of a cut value = %s, %v, want x, false", got, ok)
	}
}

// FuzzAppendTime holds AppendTime to AppendFormat, over any instant and
// zone: the edges of the years it writes by hand, and beyond them.
func FuzzAppendTime(f *testing.F) {
	for _, t := range []time.Time{
		{}, time.Unix(0, 0), time.Date(2026, 11, 30, 7, 0, 0, 123_456_789, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2024, 2, 29, 12, 30, 45, 1_000_000, time.FixedZone("x", -7*3600)),
	} {
		f.Add(t.Unix(), int64(t.Nanosecond()), 0)
	}
	f.Add(int64(1)<<62, int64(0), 3600)
	f.Add(-(int64(1) << 62), int64(999_999_999), -1)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		tm := time.Unix(sec, nsec%1e9).In(time.FixedZone("z", offset%(24*3600)))
		want := tm.UTC().AppendFormat([]byte("x"), TimeLayout)
		if got := AppendTime([]byte("x"), tm); !bytes.Equal(got, want) {
			t.Fatalf("%d.%09d: got %s, want %s", sec, nsec, got, want)
		}
	})
}

// TestAppendTimeEveryDay holds AppendTime to AppendFormat on every day
// from 1969 to 2100, at a time of day that moves with it.
func TestAppendTimeEveryDay(t *testing.T) {
	for tm := time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC); tm.Year() <= 2100; tm = tm.Add(24*time.Hour + 61*time.Second + 7*time.Millisecond) {
		want := tm.AppendFormat(nil, TimeLayout)
		if got := AppendTime(nil, tm); !bytes.Equal(got, want) {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}

// BenchmarkAppendTime: by hand against AppendFormat.
//
//	go test -run '^$' -bench AppendTime ./internal/jsonw/
func BenchmarkAppendTime(b *testing.B) {
	tm := time.Date(2026, 11, 30, 7, 0, 0, 123_456_789, time.UTC)
	buf := make([]byte, 0, 64)
	b.Run("by_hand", func(b *testing.B) {
		for b.Loop() {
			buf = AppendTime(buf[:0], tm)
		}
	})
	b.Run("append_format", func(b *testing.B) {
		for b.Loop() {
			buf = tm.UTC().AppendFormat(buf[:0], TimeLayout)
		}
	})
}
