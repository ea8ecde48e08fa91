package http

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/toc-project/toc/internal/jsonscan"
)

// A job request as clients write it is decoded without reflection: an
// object of jobRequest's keys, each once, with plain values (strings
// without escapes, integers, ids as digits, a payload) and nothing
// around it. Every other body, among them each that decodeBytes refuses,
// is left to decodeBytes, which decodes it and names what is wrong.
// FuzzDecodeJobFast holds the two to the same jobRequest. Every schedule
// decodes one, and encoding/json's reflection was a sixth of toc's CPU
// a job for the coalescing client's batches (BENCHMARKS.md, issue 35).

// decodeJobFast decodes data, one job request, into r, and reports
// whether it could; when it could not, r is as it was.
func decodeJobFast(data []byte, r *jobRequest) bool {
	s, ok := jsonscan.New(data)
	var out jobRequest
	if !ok || !scanJob(s, &out) || !s.End() {
		return false
	}
	*r = out
	return true
}

// decodeBatchFast decodes data, a batch without a group, {"with_jobs":
// bool, "jobs": [job, ...]} in either order, as decodeJobFast does a job.
func decodeBatchFast(data []byte) (head batchHead, jobs []jobRequest, ok bool) {
	s, ok := jsonscan.New(data)
	var seenJobs, seenWith bool
	ok = ok && s.Object(func(key []byte) bool {
		switch {
		case string(key) == "with_jobs" && !seenWith:
			seenWith = true
			return s.Bool(&head.WithJobs)
		case string(key) == "jobs" && !seenJobs:
			seenJobs = true
			jobs = []jobRequest{}
			return s.Array(func() bool {
				jobs = append(jobs, jobRequest{})
				return scanJob(s, &jobs[len(jobs)-1])
			})
		}
		return false
	})
	if !ok || !s.End() {
		return batchHead{}, nil, false
	}
	return head, jobs, true
}

// scanJob reads a job request's object into r.
func scanJob(s *jsonscan.Scanner, r *jobRequest) bool {
	var seen uint16
	return s.Object(func(key []byte) bool {
		f := -1
		for i, k := range jobKeys {
			if string(key) == k {
				f = i
				break
			}
		}
		if f < 0 || seen&(1<<f) != 0 {
			return false // unknown, or given twice: decodeBytes names it
		}
		seen |= 1 << f
		switch jobKeys[f] {
		case "topic":
			return s.String(&r.Topic)
		case "key":
			return s.String(&r.Key)
		case "biz_id":
			return s.Uint((*uint64)(&r.BizID))
		case "biz_type":
			return s.Uint((*uint64)(&r.BizType))
		case "fire_at":
			r.FireAt = new(string)
			return s.String(r.FireAt)
		case "delay_ms":
			r.DelayMS = new(int64)
			return s.Int(r.DelayMS, math.MinInt64, math.MaxInt64)
		case "callback_url":
			r.CallbackURL = new(string)
			return s.String(r.CallbackURL)
		case "payload":
			return scanPayload(s, &r.Payload)
		case "max_attempts":
			var n int64
			ok := s.Int(&n, math.MinInt, math.MaxInt)
			r.MaxAttempts = new(int(n))
			return ok
		case "priority":
			r.Priority = new(string)
			return s.String(r.Priority)
		case "expire_after_ms":
			r.ExpireAfterMS = new(int64)
			return s.Int(r.ExpireAfterMS, math.MinInt64, math.MaxInt64)
		case "window_ms":
			r.WindowMS = new(int64)
			return s.Int(r.WindowMS, math.MinInt64, math.MaxInt64)
		case "concurrency_key":
			return s.String(&r.ConcurrencyKey)
		case "group_id":
			r.GroupID = new(string)
			return s.String(r.GroupID)
		}
		return false
	})
}

// jobKeys are jobRequest's JSON names.
var jobKeys = [...]string{"topic", "key", "biz_id", "biz_type", "fire_at", "delay_ms", "callback_url", "payload",
	"max_attempts", "priority", "expire_after_ms", "window_ms", "concurrency_key", "group_id"}

// scanPayload reads a payload, any JSON value but null, checked as
// decodeBytes checks it: no key twice in one object.
func scanPayload(s *jsonscan.Scanner, v *json.RawMessage) bool {
	raw, ok := s.Value()
	if !ok || string(raw) == "null" {
		return false
	}
	if (raw[0] == '{' || raw[0] == '[') && (&keyChecker{data: raw}).value(nil) != nil {
		return false
	}
	*v = slices.Clone(raw)
	return true
}
