// A job's JSON by hand: the answer of every single schedule, and of the
// batches the coalescing client sends.

package http

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/toc-project/toc/internal/jsonw"
	"github.com/toc-project/toc/timer"
)

// writeJobJSON answers j as jobView shows it, the bytes writeJSON would
// write, built without reflection and without viewOf's strings:
// encoding/json's walk of the view cost 1.8 µs of a single schedule's
// 37-40 µs of toc's CPU, this 1.1 (BenchmarkWriteJob; BENCHMARKS.md,
// issue 35).
func writeJobJSON(w http.ResponseWriter, status int, j *timer.Job) {
	buf := pooledBuf()
	defer putPooledBuf(buf)
	b, ok := appendJob(slices.Grow((*buf)[:0], 512+len(j.Payload)), j)
	*buf = b
	if !ok {
		writeJSON(w, status, viewOf(j))
		return
	}
	w.Header()["Content-Type"] = jsonType
	w.WriteHeader(status)
	*buf = append(b, '\n')
	_, _ = w.Write(*buf) // the client went away; nothing to do
}

// pooledBufs holds the buffers that job requests are read into and
// answers built in, taken for one call and put back once their bytes are
// used (decode copies out what it keeps; a ResponseWriter keeps no part of
// what it is given). The two were a fifth of the bytes a single schedule
// allocated (issue 35).
var pooledBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf is the largest buffer put back: a batch's answer can be
// megabytes, which the pool would keep until the next collection.
const maxPooledBuf = 64 << 10

func pooledBuf() *[]byte { return pooledBufs.Get().(*[]byte) }

func putPooledBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		pooledBufs.Put(b)
	}
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
	buf := pooledBuf()
	defer putPooledBuf(buf)
	b := append(slices.Grow((*buf)[:0], 16+size), `{"results":[`...)
	for i, r := range res {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(append(b, `{"id":"`...), uint64(r.Job.ID), 10)
		b = jsonw.AppendString(append(b, `","status":`...), r.Job.Status.String())
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
	*buf = append(b, "]}\n"...)
	_, _ = w.Write(*buf) // the client went away; nothing to do
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
	b = jsonw.AppendString(append(b, `","topic":`...), shownTopic(j.Topic))
	b = jsonw.AppendString(append(b, `,"key":`...), j.Key)
	b = append(strconv.AppendUint(append(b, `,"biz_id":"`...), j.BizID, 10), '"')
	b = append(strconv.AppendUint(append(b, `,"biz_type":"`...), j.BizType, 10), '"')
	b = jsonw.AppendString(append(b, `,"status":`...), j.Status.String())
	b = appendTime(append(b, `,"fire_at":`...), j.DueAt)
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(j.Attempts), 10)
	b = strconv.AppendInt(append(b, `,"max_attempts":`...), int64(j.MaxAttempts), 10)
	b = jsonw.AppendString(append(b, `,"priority":`...), j.Priority.String())
	b = jsonw.AppendString(append(b, `,"last_error":`...), j.LastError)
	b = strconv.AppendInt(append(b, `,"last_status":`...), int64(j.LastStatus), 10)
	b = jsonw.AppendString(append(b, `,"callback_url":`...), j.CallbackURL)
	b, ok := jsonw.AppendRaw(append(b, `,"payload":`...), j.Payload)
	if !ok {
		return b, false
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
	b = jsonw.AppendString(append(b, `,"concurrency_key":`...), j.ConcurrencyKey)
	if j.GroupID != "" {
		b = jsonw.AppendString(append(b, `,"group_id":`...), j.GroupID)
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
		b = jsonw.AppendTime(b, t)
	}
	return append(b, '"')
}
