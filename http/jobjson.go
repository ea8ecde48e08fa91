// A job's JSON by hand: the answer of every single schedule, and of the
// batches the coalescing client sends.

package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toc-project/toc/timer"
)

// writeJobJSON answers j as jobView shows it, the bytes writeJSON would
// write, built without reflection and without viewOf's strings:
// encoding/json's walk of the view cost 1.8 µs of a single schedule's
// 37-40 µs of toc's CPU, this 1.1 (BenchmarkWriteJob; BENCHMARKS.md,
// issue 35).
func writeJobJSON(w http.ResponseWriter, status int, j *timer.Job) {
	b, ok := appendJob(make([]byte, 0, 512+len(j.Payload)), j)
	if !ok {
		writeJSON(w, status, viewOf(j))
		return
	}
	w.Header()["Content-Type"] = jsonType
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // the client went away; nothing to do
}

// writeBatchJSON answers a batch without a group, the bytes of writeJSON
// of {"results": batchItems(res, withJobs)}, built as writeJobJSON
// builds a job: the coalescing client asks every batch for its jobs in
// full.
func writeBatchJSON(w http.ResponseWriter, res []timer.Result, withJobs bool) {
	size := 64 * len(res)
	if withJobs {
		size = 512 * len(res)
	}
	b := append(make([]byte, 0, 16+size), `{"results":[`...)
	for i, r := range res {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(append(b, `{"id":"`...), uint64(r.Job.ID), 10)
		b = appendString(append(b, `","status":`...), r.Job.Status.String())
		b = strconv.AppendBool(append(b, `,"created":`...), r.Created)
		if withJobs {
			var ok bool
			if b, ok = appendJob(append(b, `,"job":`...), r.Job); !ok {
				writeJSON(w, http.StatusOK, map[string]any{"results": batchItems(res, withJobs)})
				return
			}
		}
		b = append(b, '}')
	}
	w.Header()["Content-Type"] = jsonType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, "]}\n"...)) // the client went away; nothing to do
}

// jsonType is writeJobJSON's Content-Type, one slice for every answer (a
// Header.Add that follows copies it: its capacity is its length).
var jsonType = []string{"application/json"}

// appendJob appends j's jobView as encoding/json writes it (HTML left
// unescaped; TestAppendJob holds the two to the same bytes). It reports
// false, having appended part of it, for a payload that is not JSON,
// which encoding/json refuses in its own words.
func appendJob(b []byte, j *timer.Job) ([]byte, bool) {
	b = strconv.AppendUint(append(b, `{"id":"`...), uint64(j.ID), 10)
	b = appendString(append(b, `","topic":`...), shownTopic(j.Topic))
	b = appendString(append(b, `,"key":`...), j.Key)
	b = append(strconv.AppendUint(append(b, `,"biz_id":"`...), j.BizID, 10), '"')
	b = append(strconv.AppendUint(append(b, `,"biz_type":"`...), j.BizType, 10), '"')
	b = appendString(append(b, `,"status":`...), j.Status.String())
	b = appendTime(append(b, `,"fire_at":`...), j.DueAt)
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(j.Attempts), 10)
	b = strconv.AppendInt(append(b, `,"max_attempts":`...), int64(j.MaxAttempts), 10)
	b = appendString(append(b, `,"priority":`...), j.Priority.String())
	b = appendString(append(b, `,"last_error":`...), j.LastError)
	b = strconv.AppendInt(append(b, `,"last_status":`...), int64(j.LastStatus), 10)
	b = appendString(append(b, `,"callback_url":`...), j.CallbackURL)
	b = append(b, `,"payload":`...)
	if len(j.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		buf := bytes.NewBuffer(b)
		if json.Compact(buf, j.Payload) != nil { // as a json.RawMessage is written
			return b, false
		}
		b = buf.Bytes()
	}
	b = appendTime(append(b, `,"created_at":`...), j.CreatedAt)
	b = appendTime(append(b, `,"updated_at":`...), j.UpdatedAt)
	b = strconv.AppendInt(append(b, `,"version":`...), j.Version, 10)
	b = strconv.AppendInt(append(b, `,"window_ms":`...), j.Window.Milliseconds(), 10)
	if j.Status == timer.StatusPending && j.Attempts > 0 && !j.DueAt.IsZero() {
		b = appendTime(append(b, `,"next_attempt_at":`...), j.DueAt)
	}
	if j.Expiry.Set {
		b = strconv.AppendInt(append(b, `,"expire_after_ms":`...), j.Expiry.After.Milliseconds(), 10)
		if !j.ExpireAt.IsZero() {
			b = appendTime(append(b, `,"expire_at":`...), j.ExpireAt)
		}
	}
	b = appendString(append(b, `,"concurrency_key":`...), j.ConcurrencyKey)
	if j.GroupID != "" {
		b = appendString(append(b, `,"group_id":`...), j.GroupID)
	}
	if j.Status == timer.StatusDead && !j.UpdatedAt.IsZero() {
		b = appendTime(append(b, `,"died_at":`...), j.UpdatedAt)
	}
	return append(b, '}'), true
}

// appendTime appends t as formatTime writes it, quoted: "" for the zero
// time.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	if !t.IsZero() {
		b = t.UTC().AppendFormat(b, timeLayout)
	}
	return append(b, '"')
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it with HTML escaping off: a quote, a backslash and control
// characters escaped, each invalid UTF-8 byte as U+FFFD, and U+2028 and
// U+2029, which JavaScript takes as line ends, as \u escapes.
func appendString(b []byte, s string) []byte {
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
