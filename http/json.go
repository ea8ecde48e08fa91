package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toc-project/toc/internal/jsonw"
	"github.com/toc-project/toc/timer"
)

// timeLayout is how the API writes times: RFC 3339, UTC, milliseconds.
const timeLayout = jsonw.TimeLayout

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// decimal is an unsigned 64-bit integer (biz_id, biz_type) that the API
// writes as a decimal string, since a JSON number past 2^53 loses digits in
// JavaScript and other float64 readers; it reads a string or, as earlier
// clients send, a number.
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
		return nil // as for any field: left as it is
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	// Digits only: no sign, exponent, fraction or space, in either form.
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || s == "" || s[0] == '+' || (len(s) > 1 && s[0] == '0') {
		return &json.UnmarshalTypeError{Value: string(data), Type: reflect.TypeFor[decimal]()}
	}
	*d = decimal(n)
	return nil
}

// jobRequest is the body of POST /v1/jobs and of each item of a batch.
type jobRequest struct {
	Topic       string          `json:"topic"`
	Key         string          `json:"key"`
	BizID       decimal         `json:"biz_id"`
	BizType     decimal         `json:"biz_type"`
	FireAt      *string         `json:"fire_at"`
	DelayMS     *int64          `json:"delay_ms"`
	CallbackURL *string         `json:"callback_url"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts *int            `json:"max_attempts"`
	Priority    *string         `json:"priority"`
	// ExpireAfterMS is the job's deadline: absent or null, its topic's;
	// -1, none; else this many ms after its due time.
	ExpireAfterMS *int64 `json:"expire_after_ms"`
	// WindowMS is the job's flexible window (timer.Job.Window).
	WindowMS *int64 `json:"window_ms"`
	// ConcurrencyKey: the topic's jobs with the same one run one at a
	// time (timer.Job.ConcurrencyKey).
	ConcurrencyKey string  `json:"concurrency_key"`
	GroupID        *string `json:"group_id"`
}

// whenRequest is the body of PATCH /v1/jobs/{id} and of a replay.
type whenRequest struct {
	FireAt  *string `json:"fire_at"`
	DelayMS *int64  `json:"delay_ms"`
}

// maxDelayMS bounds delay_ms before it is turned into a Duration, which
// would overflow near 292 years.
const maxDelayMS = 100 * 365 * 24 * 3600 * 1000

// when turns fire_at or delay_ms into a due time; exactly one is required
// unless optional, when neither means "now".
func (w whenRequest) when(optional bool) (time.Time, time.Duration, error) {
	switch {
	case w.FireAt != nil && w.DelayMS != nil:
		return time.Time{}, 0, &timer.FieldError{Field: "fire_at", Message: "give fire_at or delay_ms, not both"}
	case w.FireAt != nil:
		t, err := time.Parse(time.RFC3339, *w.FireAt)
		if err != nil {
			return time.Time{}, 0, &timer.FieldError{Field: "fire_at", Message: "must be an RFC 3339 time, like 2026-01-02T15:04:05.250Z"}
		}
		if !timer.ValidDue(t) {
			// Checked here too: a zero time (0001-01-01T00:00:00Z) would
			// otherwise read as "no fire_at" below.
			return time.Time{}, 0, &timer.FieldError{Field: "fire_at", Message: timer.DueRange()}
		}
		return t, 0, nil
	case w.DelayMS != nil:
		if *w.DelayMS < 0 || *w.DelayMS > maxDelayMS {
			return time.Time{}, 0, &timer.FieldError{Field: "delay_ms", Message: fmt.Sprintf("must be within 0..%d", int64(maxDelayMS))}
		}
		return time.Time{}, time.Duration(*w.DelayMS) * time.Millisecond, nil
	case optional:
		return time.Time{}, 0, nil
	}
	return time.Time{}, 0, &timer.FieldError{Field: "fire_at", Message: "one of fire_at or delay_ms is required"}
}

// request turns the body into a scheduling request, checking what the
// scheduler does not: the time fields, the payload and the callback URL's
// presence (its reachability is checked by the API).
func (b *jobRequest) request() (timer.Request, error) {
	fireAt, delay, err := whenRequest{FireAt: b.FireAt, DelayMS: b.DelayMS}.when(false)
	if err != nil {
		return timer.Request{}, err
	}
	r := timer.Request{
		Topic:   b.Topic,
		Key:     b.Key,
		BizID:   uint64(b.BizID),
		BizType: uint64(b.BizType),
		FireAt:  fireAt,
		Delay:   delay,
	}
	if err := (jobFields{b.CallbackURL, b.Payload, b.MaxAttempts, b.Priority, b.ExpireAfterMS, b.ConcurrencyKey}).apply(&r); err != nil {
		return r, err
	}
	if b.WindowMS != nil {
		if *b.WindowMS < 0 || *b.WindowMS > timer.MaxWindow.Milliseconds() {
			return r, &timer.FieldError{Field: "window_ms", Message: fmt.Sprintf("must be within 0..%d", timer.MaxWindow.Milliseconds())}
		}
		r.Window = time.Duration(*b.WindowMS) * time.Millisecond
	}
	// Not one of jobFields: a schedule's jobs join no group.
	if b.GroupID != nil {
		if err := timer.CheckGroupID(*b.GroupID, "group_id"); err != nil {
			return r, err
		}
		r.GroupID = *b.GroupID
	}
	return r, r.Validate()
}

// jobFields are the fields a job's body and a schedule's job template
// share.
type jobFields struct {
	CallbackURL *string
	Payload     json.RawMessage
	MaxAttempts *int
	Priority    *string
	// ExpireAfterMS: nil, the topic's deadline; NoExpiryMS, none; else
	// the job's own.
	ExpireAfterMS *int64
	// ConcurrencyKey is checked by timer.Request.Validate.
	ConcurrencyKey string
}

// NoExpiryMS is the expire_after_ms of a job that has no deadline, even
// when its topic has a default.
const NoExpiryMS = -1

// apply sets f in r, checking what the scheduler does not: the
// attempts' range, the priority's name, the deadline's range and the
// payload's form. Its errors name the fields as
// a job's body does.
func (f jobFields) apply(r *timer.Request) error {
	// Whether the job needs one is its topic's way's to say: the gate
	// checks it (callbackNeeded).
	r.CallbackURL = deref(f.CallbackURL)
	if f.MaxAttempts != nil {
		if *f.MaxAttempts < 1 || *f.MaxAttempts > timer.MaxAttemptsLimit {
			return &timer.FieldError{Field: "max_attempts", Message: fmt.Sprintf("must be within 1..%d", timer.MaxAttemptsLimit)}
		}
		r.MaxAttempts = *f.MaxAttempts
	}
	if f.Priority != nil {
		if *f.Priority == "" { // not taken as normal: leave it out for that
			return &timer.FieldError{Field: "priority", Message: "must be high, normal or low"}
		}
		p, err := timer.ParsePriority(*f.Priority)
		if err != nil {
			return err
		}
		r.Priority = p
	}
	if f.ExpireAfterMS != nil {
		switch ms := *f.ExpireAfterMS; {
		case ms == NoExpiryMS:
			r.NoExpiry = true
		case ms < 0 || ms > timer.MaxExpireAfter.Milliseconds():
			return &timer.FieldError{Field: "expire_after_ms", Message: fmt.Sprintf("must be within 0..%d, or -1 for no deadline", timer.MaxExpireAfter.Milliseconds())}
		default:
			r.Expiry = timer.ExpireAfter(time.Duration(ms) * time.Millisecond)
		}
	}
	r.ConcurrencyKey = f.ConcurrencyKey
	if len(f.Payload) > 0 && !bytes.Equal(f.Payload, []byte("null")) {
		r.Payload = f.Payload // the decoder's copy, checked as JSON
		// A payload without a space, tab or line end anywhere is compact
		// already, as clients mostly send it: only one with any is copied
		// again without them.
		if bytes.ContainsAny(f.Payload, " \t\r\n") {
			var compact bytes.Buffer
			if err := json.Compact(&compact, f.Payload); err != nil {
				return &timer.FieldError{Field: "payload", Message: "must be a JSON value"}
			}
			r.Payload = compact.Bytes()
		}
	}
	return nil
}

// decode reads exactly one JSON value into v, refusing unknown fields,
// trailing data, invalid UTF-8 and what encoding/json would otherwise take
// silently (see checkKeys), and names the offending field in its error.
// A job request in its plain form is read by decodeJobFast first
// (jobfast.go); decodeBytes, the reference its fuzz test holds it to,
// reads every other.
func decode(body io.Reader, v any) error {
	r, ok := v.(*jobRequest)
	if !ok {
		raw, err := io.ReadAll(body)
		if err != nil {
			return decodeError(err)
		}
		return decodeBytes(raw, v)
	}
	// A job request, the body of every single schedule, is read into a
	// pooled buffer, which goes back once decodeJobFast has copied out
	// all it keeps. A body it does not take keeps its buffer.
	buf := pooledBuf()
	read := bytes.NewBuffer((*buf)[:0])
	_, err := read.ReadFrom(body)
	raw := read.Bytes()
	*buf = raw
	if err != nil {
		putPooledBuf(buf)
		return decodeError(err)
	}
	if decodeJobFast(raw, r) {
		putPooledBuf(buf)
		return nil
	}
	return decodeBytes(raw, v)
}

// decodeBytes is decode over a body already read. It unmarshals rather
// than decoding from a stream: json.Unmarshal checks the whole body with
// a pooled scanner where a Decoder allocates its own, its buffer and a
// copy of the body (BenchmarkDecodeJob). The fields v does not have are
// refused by checkKeys, by their path, not by the decoder.
func decodeBytes(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return decodeError(syntaxError(raw, err))
	}
	if !utf8.Valid(raw) {
		// encoding/json would have replaced the bad bytes with U+FFFD: a
		// key or payload other than the one sent.
		return &timer.FieldError{Message: "the body is not valid UTF-8"}
	}
	return checkKeys(raw, reflect.TypeOf(v))
}

// checkKeys refuses, in data (one JSON value that encoding/json has
// already parsed into a value of type t), what encoding/json takes
// silently: a key repeated in one object, anywhere in the body (it keeps
// the last, so a job could land in another topic than a reader of the body
// sees), and, in an object decoded into a struct, a key that names a field
// in another case ("Topic" for "topic": encoding/json matches names
// case-insensitively). Its error names the key by its path ("payload.a",
// "retry.base_ms", "jobs[2].topic").
//
// It is a byte-level pass rather than a second decode with
// json.Decoder.Token, which allocates per token: BenchmarkDecodeJob.
func checkKeys(data []byte, t reflect.Type) error {
	c := keyChecker{data: data}
	return c.value(t)
}

type keyChecker struct {
	data []byte
	i    int
}

func (c *keyChecker) space() {
	for c.i < len(c.data) {
		switch c.data[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// under returns err with its field prefixed by the path component p: the
// path is built only on the way out of an error.
func under(p string, err error) error {
	if fe, ok := err.(*timer.FieldError); ok {
		if fe.Field != "" && fe.Field[0] != '[' {
			p += "."
		}
		fe.Field = p + fe.Field
	}
	return err
}

// value checks the value at c.i, known to be well-formed, bound to type t
// (nil: not decoded into a struct anywhere below).
func (c *keyChecker) value(t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t != rawMessageType && reflect.PointerTo(t).Implements(unmarshalerType) {
		c.skip() // it decodes its bytes itself, and checks them
		return nil
	}
	if t != nil && (t == rawMessageType || t.Kind() == reflect.Interface) {
		t = nil
	}
	c.space()
	switch c.data[c.i] {
	case '{':
		return c.object(t)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		c.i++
		for n := 0; ; n++ {
			c.space()
			if c.data[c.i] == ']' {
				c.i++
				return nil
			}
			if err := c.value(elem); err != nil {
				return under("["+strconv.Itoa(n)+"]", err)
			}
			c.space()
			if c.data[c.i] == ',' {
				c.i++
			}
		}
	case '"':
		c.str()
	default: // a number, true, false or null
		for c.i < len(c.data) {
			switch c.data[c.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return nil
			}
			c.i++
		}
	}
	return nil
}

func (c *keyChecker) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	var (
		buf   [16][]byte
		small = buf[:0] // the keys seen while few; then seen
		seen  map[string]bool
	)
	c.i++
	for {
		c.space()
		if c.data[c.i] == '}' {
			c.i++
			return nil
		}
		key := c.key()
		var dup bool
		switch {
		case seen != nil:
			dup = seen[string(key)]
			seen[string(key)] = true
		case len(small) < len(buf):
			dup = slices.ContainsFunc(small, func(k []byte) bool { return bytes.Equal(k, key) })
			small = append(small, key)
		default:
			seen = make(map[string]bool, 4*len(small))
			for _, k := range small {
				seen[string(k)] = true
			}
			dup = seen[string(key)]
			seen[string(key)] = true
		}
		if dup {
			return &timer.FieldError{Field: string(key), Message: "duplicate key " + strconv.Quote(string(key)) + ": a key may appear only once in an object"}
		}
		vt := elem
		if fields != nil {
			ft, ok := fields[string(key)]
			if !ok {
				return unknownField(string(key), fields)
			}
			vt = ft
		}
		c.space()
		c.i++ // ':'
		if err := c.value(vt); err != nil {
			return under(string(key), err)
		}
		c.space()
		if c.data[c.i] == ',' {
			c.i++
		}
	}
}

// unknownField is the error of a key that names none of fields, saying
// so when it names one in another case.
func unknownField(key string, fields map[string]reflect.Type) error {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return &timer.FieldError{Field: key, Message: "unknown field (field names are case-sensitive: " + strconv.Quote(name) + ")"}
		}
	}
	return &timer.FieldError{Field: key, Message: "unknown field"}
}

// skip passes over the value at c.i without checking it.
func (c *keyChecker) skip() {
	c.space()
	depth := 0
	for {
		switch c.data[c.i] {
		case '"':
			c.str()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				c.i++
				return
			}
		}
		if depth == 0 { // a number, true, false or null
			c.value(nil)
			return
		}
		c.i++
	}
}

// str skips the string at c.i and returns its raw bytes between the
// quotes, and whether they hold an escape.
func (c *keyChecker) str() (raw []byte, escaped bool) {
	c.i++
	start := c.i
	for {
		switch c.data[c.i] {
		case '\\':
			escaped = true
			c.i += 2
		case '"':
			raw = c.data[start:c.i]
			c.i++
			return raw, escaped
		default:
			c.i++
		}
	}
}

// key returns the object key at c.i, unescaped, without a copy unless it
// holds an escape.
func (c *keyChecker) key() []byte {
	raw, escaped := c.str()
	if !escaped {
		return raw
	}
	var s string
	_ = json.Unmarshal(c.data[c.i-len(raw)-2:c.i], &s) // well-formed: already parsed
	return []byte(s)
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	structFields    sync.Map // reflect.Type → map[string]reflect.Type
)

// fieldsOf returns the JSON names of struct t's fields and their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := structFields.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		fields[name] = f.Type
	}
	structFields.Store(t, fields)
	return fields
}

// syntaxError tells apart what json.Unmarshal reports alike as a
// syntax error: a body of only white space (io.EOF), one that ends inside
// its value (io.ErrUnexpectedEOF), and data after the value; any other
// error is err.
func syntaxError(raw []byte, err error) error {
	se, ok := errors.AsType[*json.SyntaxError](err)
	switch {
	case !ok:
		return err
	case len(bytes.Trim(raw, " \t\r\n")) == 0:
		return io.EOF
	case se.Offset == int64(len(raw)) && se.Error() == "unexpected end of JSON input":
		return io.ErrUnexpectedEOF
	case strings.HasSuffix(se.Error(), " after top-level value"):
		return &timer.FieldError{Message: "trailing data after the JSON value"}
	}
	return err
}

func decodeError(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		mbe    *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return mbe
	case errors.Is(err, io.EOF):
		return &timer.FieldError{Message: "the body is empty; a JSON object is required"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &timer.FieldError{Message: "the body ends in the middle of a JSON value"}
	case errors.As(err, &syntax):
		return &timer.FieldError{Message: fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)}
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &timer.FieldError{Message: "the body must be a JSON object"}
		}
		return &timer.FieldError{Field: typ.Field, Message: "must be " + typeName(typ.Type.String())}
	case errors.As(err, new(*timer.FieldError)):
		return err
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return &timer.FieldError{Field: name, Message: "unknown field"}
	}
	return &timer.FieldError{Message: "malformed JSON: " + err.Error()}
}

func typeName(goType string) string {
	switch goType {
	case "uint64":
		return "an unsigned integer"
	case "http.decimal":
		return "an unsigned 64-bit integer, as a decimal string or a number"
	case "int64", "int":
		return "an integer"
	case "float64":
		return "a number"
	case "string":
		return "a string"
	}
	return "of another type (" + goType + ")"
}

// jobView is a job as the API shows it.
type jobView struct {
	ID          string          `json:"id"`
	Topic       string          `json:"topic"`
	Key         string          `json:"key"`
	BizID       decimal         `json:"biz_id"`
	BizType     decimal         `json:"biz_type"`
	Status      string          `json:"status"`
	FireAt      string          `json:"fire_at"`
	Attempts    int             `json:"attempts"`
	MaxAttempts int             `json:"max_attempts"`
	Priority    string          `json:"priority"`
	LastError   string          `json:"last_error"`
	LastStatus  int             `json:"last_status"`
	CallbackURL string          `json:"callback_url"`
	Payload     json.RawMessage `json:"payload"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	// Version counts the changes of the job; GET answers it as the ETag,
	// and PATCH and DELETE take it in If-Match.
	Version int64 `json:"version"`
	// WindowMS is the job's flexible window: it may fire until fire_at
	// plus this many ms; 0 for none.
	WindowMS int64 `json:"window_ms"`

	// NextAttemptAt is when a pending job that has failed is retried.
	NextAttemptAt string `json:"next_attempt_at,omitempty"`
	// ExpireAfterMS and ExpireAt are the job's deadline, when it has one.
	ExpireAfterMS *int64 `json:"expire_after_ms,omitempty"`
	ExpireAt      string `json:"expire_at,omitempty"`
	// ConcurrencyKey is the job's, "" for none.
	ConcurrencyKey string `json:"concurrency_key"`
	// GroupID is the job's group, when it has one.
	GroupID string `json:"group_id,omitempty"`
	// DiedAt is when a dead job died (its UpdatedAt); "" unless it is dead.
	DiedAt string `json:"died_at,omitempty"`
}

func viewOf(j *timer.Job) jobView {
	v := jobView{
		ID:             j.ID.String(),
		Topic:          shownTopic(j.Topic),
		Key:            j.Key,
		BizID:          decimal(j.BizID),
		BizType:        decimal(j.BizType),
		Status:         j.Status.String(),
		FireAt:         formatTime(j.DueAt),
		Attempts:       j.Attempts,
		MaxAttempts:    j.MaxAttempts,
		Priority:       j.Priority.String(),
		LastError:      j.LastError,
		LastStatus:     j.LastStatus,
		CallbackURL:    j.CallbackURL,
		Payload:        json.RawMessage("null"),
		CreatedAt:      formatTime(j.CreatedAt),
		UpdatedAt:      formatTime(j.UpdatedAt),
		Version:        j.Version,
		WindowMS:       j.Window.Milliseconds(),
		ConcurrencyKey: j.ConcurrencyKey,
		GroupID:        j.GroupID,
	}
	if len(j.Payload) > 0 {
		v.Payload = j.Payload
	}
	if j.Status == timer.StatusPending && j.Attempts > 0 {
		v.NextAttemptAt = v.FireAt
	}
	if j.Expiry.Set {
		ms := j.Expiry.After.Milliseconds()
		v.ExpireAfterMS, v.ExpireAt = &ms, formatTime(j.ExpireAt)
	}
	if j.Status == timer.StatusDead {
		v.DiedAt = v.UpdatedAt
	}
	return v
}

// attemptsView is what GET /v1/jobs/{id}/attempts shows.
type attemptsView struct {
	Attempts []attemptView `json:"attempts"`
}

// attemptView is one attempt as the API shows it; the excerpt is text,
// its invalid UTF-8 replaced.
type attemptView struct {
	Attempt         int    `json:"attempt"`
	StartedAt       string `json:"started_at"`
	DurationMs      int64  `json:"duration_ms"`
	StatusCode      int    `json:"status_code,omitempty"`
	Error           string `json:"error"`
	ResponseExcerpt string `json:"response_excerpt"`
}

func attemptViewOf(a timer.Attempt) attemptView {
	return attemptView{
		Attempt:         a.Attempt,
		StartedAt:       formatTime(a.StartedAt),
		DurationMs:      a.Duration.Milliseconds(),
		StatusCode:      a.StatusCode,
		Error:           a.Error,
		ResponseExcerpt: strings.ToValidUTF8(string(a.Excerpt), "\uFFFD"),
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// readBatchBody reads the body of POST /v1/jobs/batch, counting as it
// goes the objects that open directly inside the values of its top-level
// object: a batch's items, and its group's on_complete. Past
// MaxBatchJobs+1 of them the batch cannot be valid: it stops reading with
// errBatchSize, so a body of many small items costs no more memory than
// MaxBatchJobs of them. The count is a guard only; the body is decoded,
// and its items counted exactly, once read.
//
// size, when known (the Content-Length), sizes the buffer at once, up to
// maxBatchPresize: a larger body grows it as it comes.
func readBatchBody(body io.Reader, size int64) ([]byte, error) {
	// Read straight into the buffer's room, each piece counted as it
	// lands: a Content-Length makes the one allocation of a batch.
	raw := make([]byte, 0, int(max(0, min(size, maxBatchPresize)))+bytes.MinRead)
	var c objectCounter
	for {
		if len(raw) == cap(raw) {
			raw = slices.Grow(raw, bytes.MinRead)
		}
		n, err := body.Read(raw[len(raw):cap(raw)])
		if c.scan(raw[len(raw):len(raw)+n]) > MaxBatchJobs+1 {
			return nil, errBatchSize
		}
		raw = raw[:len(raw)+n]
		if errors.Is(err, io.EOF) {
			return raw, nil
		}
		if err != nil {
			return nil, decodeError(err)
		}
	}
}

// maxBatchPresize bounds the buffer a batch's Content-Length makes at
// once, before any of its bytes came.
const maxBatchPresize = 4 << 20

// objectCounter counts the JSON objects that open at depth 2 (inside a
// value of the top-level object), over a text fed to it in pieces; a
// malformed text is counted somehow, and refused by the decoder after.
type objectCounter struct {
	depth         int
	inString, esc bool
	objects       int
}

func (c *objectCounter) scan(p []byte) int {
	for _, b := range p {
		switch {
		case c.esc:
			c.esc = false
		case c.inString:
			switch b {
			case '\\':
				c.esc = true
			case '"':
				c.inString = false
			}
		case b == '"':
			c.inString = true
		case b == '{' || b == '[':
			if b == '{' && c.depth == 2 {
				c.objects++
			}
			c.depth++
		case b == '}' || b == ']':
			c.depth--
		}
	}
	return c.objects
}

// batchHead is what a batch's body says beside its jobs: the group they
// join, and whether its answer shows each job in full (with_jobs).
type batchHead struct {
	Group    *batchGroupRequest
	WithJobs bool
}

// decodeBatch decodes a batch's body: its head and its items, in one
// pass when every item is a well-formed job (the common case), else each
// item alone, so that an item's error names it (errs, by index; nil when
// none failed).
func decodeBatch(raw []byte) (head batchHead, bodies []jobRequest, errs []error, err error) {
	if head, bodies, ok := decodeBatchFast(raw); ok {
		return head, bodies, nil, nil
	}
	var fast struct {
		Group    *batchGroupRequest `json:"group"`
		WithJobs bool               `json:"with_jobs"`
		Jobs     []jobRequest       `json:"jobs"`
	}
	if decodeBytes(raw, &fast) == nil {
		return batchHead{Group: fast.Group, WithJobs: fast.WithJobs}, fast.Jobs, nil, nil
	}
	var slow struct {
		Group    *batchGroupRequest `json:"group"`
		WithJobs bool               `json:"with_jobs"`
		Jobs     []batchItemJSON    `json:"jobs"`
	}
	if err := decodeBytes(raw, &slow); err != nil {
		return batchHead{}, nil, nil, err
	}
	bodies, errs = make([]jobRequest, len(slow.Jobs)), make([]error, len(slow.Jobs))
	for i, item := range slow.Jobs {
		errs[i] = decodeBytes(item, &bodies[i])
	}
	return batchHead{Group: slow.Group, WithJobs: slow.WithJobs}, bodies, errs, nil
}

// batchItemJSON is one item of a batch, kept as it came to be decoded on
// its own (checkKeys leaves a type with its own UnmarshalJSON to it).
type batchItemJSON []byte

func (b *batchItemJSON) UnmarshalJSON(data []byte) error {
	*b = slices.Clone(data)
	return nil
}
