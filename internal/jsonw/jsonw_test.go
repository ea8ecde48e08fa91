package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
