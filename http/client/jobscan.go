package client

import (
	"math"
	"slices"
	"strings"

	"github.com/toc-project/toc/internal/jsonscan"
)

// A job in an answer is read without reflection when it is as toc
// writes it: strings without escapes, integers, ids as digits, any
// payload. Anything else (an escape, a null, a key in another case) is
// left to encoding/json, which reads it as before; FuzzScanJob holds the
// two to the same value. A field this client does not know, of a newer
// toc, is passed over, as encoding/json does. Every Schedule reads one,
// and encoding/json's reflection was a quarter of the coalescing
// client's CPU a job (BENCHMARKS.md, issue 35).

// jobKeys are jobJSON's names.
var jobKeys = []string{"id", "topic", "key", "biz_id", "biz_type", "status", "fire_at", "attempts", "max_attempts",
	"priority", "last_error", "last_status", "callback_url", "payload", "created_at", "updated_at", "next_attempt_at",
	"version", "expire_after_ms", "expire_at", "window_ms", "concurrency_key", "group_id", "died_at"}

// decodeFast implements fastDecoder.
func (w *jobJSON) decodeFast(data []byte) bool {
	s, ok := jsonscan.New(data)
	var out jobJSON
	if !ok || !scanJob(s, &out) || !s.End() {
		return false
	}
	*w = out
	return true
}

// scanJob reads a job's object into w.
func scanJob(s *jsonscan.Scanner, w *jobJSON) bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.Uint((*uint64)(&w.ID))
		case "topic":
			return s.String(&w.Topic)
		case "key":
			return s.String(&w.Key)
		case "biz_id":
			return s.Uint((*uint64)(&w.BizID))
		case "biz_type":
			return s.Uint((*uint64)(&w.BizType))
		case "status":
			return s.String((*string)(&w.Status))
		case "fire_at":
			return scanStamp(s, &w.FireAt)
		case "attempts":
			return scanInt(s, &w.Attempts)
		case "max_attempts":
			return scanInt(s, &w.MaxAttempts)
		case "priority":
			return s.String((*string)(&w.Priority))
		case "last_error":
			return s.String(&w.LastError)
		case "last_status":
			return scanInt(s, &w.LastStatus)
		case "callback_url":
			return s.String(&w.CallbackURL)
		case "payload":
			raw, ok := s.Value()
			w.Payload = slices.Clone(raw)
			return ok
		case "created_at":
			return scanStamp(s, &w.CreatedAt)
		case "updated_at":
			return scanStamp(s, &w.UpdatedAt)
		case "next_attempt_at":
			return scanStamp(s, &w.NextAttemptAt)
		case "version":
			return s.Int(&w.Version, math.MinInt64, math.MaxInt64)
		case "expire_after_ms":
			w.ExpireAfterMS = new(int64)
			return s.Int(w.ExpireAfterMS, math.MinInt64, math.MaxInt64)
		case "expire_at":
			return scanStamp(s, &w.ExpireAt)
		case "window_ms":
			return s.Int(&w.WindowMS, math.MinInt64, math.MaxInt64)
		case "concurrency_key":
			return s.String(&w.ConcurrencyKey)
		case "group_id":
			return s.String(&w.GroupID)
		case "died_at":
			return scanStamp(s, &w.DiedAt)
		}
		return passOver(s, key, jobKeys)
	})
}

// passOver reads the value of a key a struct does not have, which
// encoding/json passes over, unless the key names one of known in
// another case: encoding/json would decode that one into it.
func passOver(s *jsonscan.Scanner, key []byte, known []string) bool {
	if slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, string(key)) }) {
		return false
	}
	_, ok := s.Value()
	return ok
}

func scanInt(s *jsonscan.Scanner, v *int) bool {
	var n int64
	ok := s.Int(&n, math.MinInt, math.MaxInt)
	*v = int(n)
	return ok
}

// scanStamp reads a time as the API writes it, "" for none.
func scanStamp(s *jsonscan.Scanner, v *stamp) bool {
	b, ok := s.Bytes()
	return ok && v.parse(string(b)) == nil
}

// batchAnswer is the answer to a batch with its jobs (with_jobs), as
// the coalescer reads it.
type batchAnswer struct {
	Results []batchResultJob `json:"results"`
}

type batchResultJob struct {
	Created bool     `json:"created"`
	Job     *jobJSON `json:"job"`
}

// decodeFast implements fastDecoder. A key given twice is left to
// encoding/json, which decodes the second value into the first's.
func (a *batchAnswer) decodeFast(data []byte) bool {
	s, ok := jsonscan.New(data)
	var out batchAnswer
	ok = ok && s.Object(func(key []byte) bool {
		if string(key) != "results" || out.Results != nil {
			return passOver(s, key, []string{"results"})
		}
		out.Results = []batchResultJob{}
		return s.Array(func() bool {
			out.Results = append(out.Results, batchResultJob{})
			r := &out.Results[len(out.Results)-1]
			var created bool
			return s.Object(func(key []byte) bool {
				switch {
				case string(key) == "created" && !created:
					created = true
					return s.Bool(&r.Created)
				case string(key) == "job" && r.Job == nil:
					r.Job = new(jobJSON)
					return scanJob(s, r.Job)
				}
				return passOver(s, key, []string{"created", "job"})
			})
		})
	})
	if !ok || !s.End() {
		return false
	}
	*a = out
	return true
}
