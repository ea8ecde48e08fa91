// The JSON forms of the API's values that Go types do not write as the
// API does: 64-bit integers as decimal strings, times in milliseconds,
// durations in milliseconds.

package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// timeLayout is how the API writes times: RFC 3339, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// decimal is a uint64 the API writes as a decimal string ("42") and reads
// as a string or a number.
type decimal uint64

func (d decimal) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(d), 10)
	return append(b, '"'), nil
}

func (d *decimal) UnmarshalJSON(data []byte) error {
	s := string(data)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || s == "" || s[0] == '+' {
		return fmt.Errorf("%s is not an unsigned 64-bit integer, as a decimal string or a number", data)
	}
	*d = decimal(n)
	return nil
}

// stamp is a time the API writes in timeLayout, "" for none.
type stamp time.Time

func (s stamp) IsZero() bool { return time.Time(s).IsZero() }

func (s stamp) MarshalJSON() ([]byte, error) {
	return json.Marshal(formatTime(time.Time(s)))
}

func (s *stamp) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	var v string
	if n := len(data); n >= 2 && data[0] == '"' && data[n-1] == '"' && bytes.IndexByte(data, '\\') < 0 {
		v = string(data[1 : n-1]) // no escape to undo: every time the API writes
	} else if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return s.parse(v)
}

// parse sets s to the time v, as the API writes it; the zero time for "".
func (s *stamp) parse(v string) error {
	if v == "" {
		*s = stamp{}
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return err
	}
	*s = stamp(t)
	return nil
}

// marshal is json.Marshal without its escapes of <, > and &, which the
// API does not write either (an encoder of its own may still add them).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// formatTime writes t as the API does; "" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// millis is a duration the API writes as whole milliseconds.
type millis time.Duration

func (m millis) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, time.Duration(m).Milliseconds(), 10), nil
}

func (m *millis) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	var f float64
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	if math.Abs(f) > float64(math.MaxInt64/int64(time.Millisecond)) {
		return fmt.Errorf("%s ms is out of range", data)
	}
	*m = millis(time.Duration(math.Round(f * float64(time.Millisecond))))
	return nil
}

// ms is d in whole milliseconds, rounded up: a due time is never earlier
// than asked.
func ms(d time.Duration) int64 {
	n := d.Milliseconds()
	if d > time.Duration(n)*time.Millisecond {
		n++
	}
	return n
}

// payload is a JSON value as the API shows it: null for none.
func payloadOf(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// rawPayload is a decoded payload, nil for null.
func rawPayload(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return raw
}
