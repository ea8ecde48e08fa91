package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// timeLayout is how the API writes times: RFC 3339, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// jobRequest is the body of POST /v1/jobs and of each item of a batch.
type jobRequest struct {
	Topic       string          `json:"topic"`
	Key         string          `json:"key"`
	BizID       uint64          `json:"biz_id"`
	BizType     uint64          `json:"biz_type"`
	FireAt      *string         `json:"fire_at"`
	DelayMS     *int64          `json:"delay_ms"`
	CallbackURL *string         `json:"callback_url"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts *int            `json:"max_attempts"`
	Priority    *string         `json:"priority"`
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
		BizID:   b.BizID,
		BizType: b.BizType,
		FireAt:  fireAt,
		Delay:   delay,
	}
	if b.CallbackURL == nil || *b.CallbackURL == "" {
		return r, &timer.FieldError{Field: "callback_url", Message: "required"}
	}
	r.CallbackURL = *b.CallbackURL
	if b.MaxAttempts != nil {
		if *b.MaxAttempts < 1 || *b.MaxAttempts > timer.MaxAttemptsLimit {
			return r, &timer.FieldError{Field: "max_attempts", Message: fmt.Sprintf("must be within 1..%d", timer.MaxAttemptsLimit)}
		}
		r.MaxAttempts = *b.MaxAttempts
	}
	if b.Priority != nil {
		if r.Priority, err = timer.ParsePriority(*b.Priority); err != nil {
			return r, err
		}
	}
	if len(b.Payload) > 0 && !bytes.Equal(b.Payload, []byte("null")) {
		var compact bytes.Buffer
		if err := json.Compact(&compact, b.Payload); err != nil {
			return r, &timer.FieldError{Field: "payload", Message: "must be a JSON value"}
		}
		r.Payload = compact.Bytes()
	}
	return r, r.Validate()
}

// decode reads exactly one JSON value into v, refusing unknown fields and
// trailing data, and names the offending field in its error.
func decode(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return mbe
		}
		return &timer.FieldError{Field: "", Message: "trailing data after the JSON value"}
	}
	return nil
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
	BizID       uint64          `json:"biz_id"`
	BizType     uint64          `json:"biz_type"`
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
}

func viewOf(j *timer.Job) jobView {
	v := jobView{
		ID:          j.ID.String(),
		Topic:       j.Topic,
		Key:         j.Key,
		BizID:       j.BizID,
		BizType:     j.BizType,
		Status:      j.Status.String(),
		FireAt:      formatTime(j.DueAt),
		Attempts:    j.Attempts,
		MaxAttempts: j.MaxAttempts,
		Priority:    j.Priority.String(),
		LastError:   j.LastError,
		LastStatus:  j.LastStatus,
		CallbackURL: j.CallbackURL,
		Payload:     json.RawMessage("null"),
		CreatedAt:   formatTime(j.CreatedAt),
		UpdatedAt:   formatTime(j.UpdatedAt),
	}
	if len(j.Payload) > 0 {
		v.Payload = j.Payload
	}
	return v
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
