package http

import (
	"encoding/json"
	"math"
	"slices"
	"unicode/utf8"
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
	if !utf8.Valid(data) {
		return false
	}
	s := fastScan{b: data}
	var out jobRequest
	if !s.job(&out) || !s.end() {
		return false
	}
	*r = out
	return true
}

// decodeBatchFast decodes data, a batch without a group, {"with_jobs":
// bool, "jobs": [job, ...]} in either order, as decodeJobFast does a job.
func decodeBatchFast(data []byte) (head batchHead, jobs []jobRequest, ok bool) {
	if !utf8.Valid(data) {
		return batchHead{}, nil, false
	}
	s := fastScan{b: data}
	var seenJobs, seenWith bool
	ok = s.object(func(key []byte) bool {
		switch {
		case string(key) == "with_jobs" && !seenWith:
			seenWith = true
			return s.boolean(&head.WithJobs)
		case string(key) == "jobs" && !seenJobs:
			seenJobs = true
			jobs = []jobRequest{}
			return s.array(func() bool {
				jobs = append(jobs, jobRequest{})
				return s.job(&jobs[len(jobs)-1])
			})
		}
		return false
	})
	if !ok || !s.end() {
		return batchHead{}, nil, false
	}
	return head, jobs, true
}

// fastScan reads JSON at b[i:]; each method reports false for what it
// leaves to encoding/json.
type fastScan struct {
	b []byte
	i int
}

func (s *fastScan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// next passes over c after spaces.
func (s *fastScan) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only spaces are left.
func (s *fastScan) end() bool {
	s.space()
	return s.i == len(s.b)
}

// object reads an object, handing each key to member, which reads its
// value.
func (s *fastScan) object(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		key, ok := s.bytes()
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

// array reads an array, element reading each element.
func (s *fastScan) array(element func() bool) bool {
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

// job reads a job request's object into r.
func (s *fastScan) job(r *jobRequest) bool {
	var seen uint16
	return s.object(func(key []byte) bool {
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
			return s.plain(&r.Topic)
		case "key":
			return s.plain(&r.Key)
		case "biz_id":
			return s.decimal(&r.BizID)
		case "biz_type":
			return s.decimal(&r.BizType)
		case "fire_at":
			r.FireAt = new(string)
			return s.plain(r.FireAt)
		case "delay_ms":
			r.DelayMS = new(int64)
			return s.integer(r.DelayMS)
		case "callback_url":
			r.CallbackURL = new(string)
			return s.plain(r.CallbackURL)
		case "payload":
			return s.payload(&r.Payload)
		case "max_attempts":
			var n int64
			r.MaxAttempts = new(int)
			ok := s.integer(&n) && n >= math.MinInt && n <= math.MaxInt
			*r.MaxAttempts = int(n)
			return ok
		case "priority":
			r.Priority = new(string)
			return s.plain(r.Priority)
		case "expire_after_ms":
			r.ExpireAfterMS = new(int64)
			return s.integer(r.ExpireAfterMS)
		case "window_ms":
			r.WindowMS = new(int64)
			return s.integer(r.WindowMS)
		case "concurrency_key":
			return s.plain(&r.ConcurrencyKey)
		case "group_id":
			r.GroupID = new(string)
			return s.plain(r.GroupID)
		}
		return false
	})
}

// jobKeys are jobRequest's JSON names.
var jobKeys = [...]string{"topic", "key", "biz_id", "biz_type", "fire_at", "delay_ms", "callback_url", "payload",
	"max_attempts", "priority", "expire_after_ms", "window_ms", "concurrency_key", "group_id"}

// bytes reads a string without escapes or control characters (the body
// is valid UTF-8), and returns its bytes in b.
func (s *fastScan) bytes() ([]byte, bool) {
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

// plain reads a string as bytes does into v.
func (s *fastScan) plain(v *string) bool {
	b, ok := s.bytes()
	*v = string(b)
	return ok
}

func (s *fastScan) boolean(v *bool) bool {
	s.space()
	switch {
	case len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "true":
		*v, s.i = true, s.i+4
	case len(s.b)-s.i >= 5 && string(s.b[s.i:s.i+5]) == "false":
		*v, s.i = false, s.i+5
	default:
		return false
	}
	return true
}

// digits reads a run of digits without a leading zero (but "0") as an
// unsigned number no greater than limit.
func (s *fastScan) digits(limit uint64) (uint64, bool) {
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
		return 0, false // a fraction or an exponent: not an integer field's
	}
	return n, true
}

// integer reads a JSON integer into an int64.
func (s *fastScan) integer(v *int64) bool {
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
	*v = int64(n) // 2^63 wraps to math.MinInt64, which the minus keeps
	if neg {
		*v = -*v
	}
	return true
}

// decimal reads an id, digits alone or in quotes, as decimal's
// UnmarshalJSON does.
func (s *fastScan) decimal(v *decimal) bool {
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
	*v = decimal(n)
	return true
}

// payload reads any JSON value but null as it came, checked as
// decodeBytes checks it: valid, and no key twice in one object.
func (s *fastScan) payload(v *json.RawMessage) bool {
	s.space()
	start := s.i
	if s.i == len(s.b) {
		return false
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
	default: // a number, true or false (or null, refused below)
		for s.i < len(s.b) && !slices.Contains([]byte(",}] \t\n\r"), s.b[s.i]) {
			s.i++
		}
	}
	return s.payloadOf(start, v)
}

// skipString passes over the string at i, escapes and all, unchecked.
func (s *fastScan) skipString() {
	for s.i++; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			s.i++
		}
	}
	s.i++
}

// payloadOf takes b[start:i] as the payload if it is one.
func (s *fastScan) payloadOf(start int, v *json.RawMessage) bool {
	if s.i > len(s.b) {
		return false // a string not closed
	}
	raw := s.b[start:s.i]
	if len(raw) == 0 || string(raw) == "null" || !json.Valid(raw) {
		return false
	}
	if raw[0] == '{' || raw[0] == '[' {
		if (&keyChecker{data: raw}).value(nil) != nil {
			return false
		}
	}
	*v = slices.Clone(raw)
	return true
}
