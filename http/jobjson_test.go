package http

import (
	"bytes"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// TestAppendJob holds writeJobJSON to writeJSON's bytes for the same job:
// every field set and unset, strings that need escaping, payloads that
// are not compact, and jobs drawn at random.
func TestAppendJob(t *testing.T) {
	base := time.Date(2026, 11, 30, 7, 0, 0, 123_000_000, time.UTC)
	plain := &timer.Job{
		ID: 42, Topic: "orders", Key: "order-1", Status: timer.StatusPending, DueAt: base,
		MaxAttempts: 3, CallbackURL: "http://localhost:9000/hook", Payload: []byte(`{"a":1}`),
		CreatedAt: base.Add(-time.Minute), UpdatedAt: base.Add(-time.Minute), Version: 1,
	}
	cases := map[string]func(j *timer.Job){
		"plain":             func(*timer.Job) {},
		"no payload":        func(j *timer.Job) { j.Payload = nil },
		"empty payload":     func(j *timer.Job) { j.Payload = []byte{} },
		"spaced payload":    func(j *timer.Job) { j.Payload = []byte(" {\n \"a\" : [1, 2,\t\"<&>\"] }\n") },
		"payload string":    func(j *timer.Job) { j.Payload = []byte(`"\u2028 <b>"`) },
		"retried":           func(j *timer.Job) { j.Attempts, j.LastStatus, j.LastError = 1, 500, `webhook: answered 500 "busy"` },
		"dead":              func(j *timer.Job) { j.Status, j.Attempts, j.LastError = timer.StatusDead, 3, "timeout\n\tafter 10s" },
		"dead, no modified": func(j *timer.Job) { j.Status, j.UpdatedAt = timer.StatusDead, time.Time{} },
		"deadline":          func(j *timer.Job) { j.Expiry, j.ExpireAt = timer.ExpireAfter(90*time.Second), base.Add(90*time.Second) },
		"deadline, no time": func(j *timer.Job) { j.Expiry = timer.ExpireAfter(time.Second) },
		"grouped, keyed":    func(j *timer.Job) { j.GroupID, j.ConcurrencyKey = "g-1", "user:7" },
		"namespaced":        func(j *timer.Job) { j.Topic = "sandbox" + timer.NamespaceSep + "orders" },
		"ids":               func(j *timer.Job) { j.BizID, j.BizType, j.Priority = 1<<63+5, 7, timer.PriorityHigh },
		"window":            func(j *timer.Job) { j.Window, j.Priority = 1500*time.Millisecond, timer.PriorityLow },
		"zero times":        func(j *timer.Job) { j.DueAt, j.CreatedAt, j.UpdatedAt = time.Time{}, time.Time{}, time.Time{} },
		"other zone":        func(j *timer.Job) { j.DueAt = base.In(time.FixedZone("x", 3600)) },
		"escapes":           func(j *timer.Job) { j.Key = "a\"b\\c\x00\x1f\x7f<>&\u2028\u2029é\xff\xc3" },
		"every byte":        func(j *timer.Job) { j.LastError = everyByte() },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			j := *plain
			change(&j)
			sameAsWriteJSON(t, &j)
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		j := *plain
		j.Key, j.LastError, j.CallbackURL = randomString(rng), randomString(rng), randomString(rng)
		j.ConcurrencyKey, j.GroupID = randomString(rng), randomString(rng)
		j.Status, j.Attempts = timer.Status(rng.IntN(7)), rng.IntN(3)
		sameAsWriteJSON(t, &j)
	}
}

// TestAppendJobBadPayload: a stored payload that is not JSON is answered
// as writeJSON answers it.
func TestAppendJobBadPayload(t *testing.T) {
	j := &timer.Job{ID: 1, Topic: "t", Payload: []byte(`{"a":`)}
	if _, ok := appendJob(nil, j); ok {
		t.Fatal("appendJob took a payload that is not JSON")
	}
	sameAsWriteJSON(t, j)
}

// TestWriteBatchJSON holds writeBatchJSON to writeJSON's bytes for a
// batch's answer, with and without its jobs in full, and falls back to
// it for a payload that is not JSON.
func TestWriteBatchJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 2, 50} {
		res := make([]timer.Result, n)
		for i := range res {
			res[i] = timer.Result{Job: &timer.Job{ID: timer.JobID(1000 + i), Topic: "orders", Key: randomString(rng),
				Status: timer.Status(rng.IntN(7)), DueAt: base, CreatedAt: base, UpdatedAt: base, Payload: []byte(`{"n": 1}`)}, Created: rng.IntN(2) == 0}
		}
		for _, withJobs := range []bool{false, true} {
			sameBatch(t, res, withJobs)
		}
		if n > 0 {
			res[n-1].Job.Payload = []byte("{")
			sameBatch(t, res, true)
		}
	}
}

func sameBatch(t *testing.T, res []timer.Result, withJobs bool) {
	t.Helper()
	want, got := httptest.NewRecorder(), httptest.NewRecorder()
	writeJSON(want, 200, map[string]any{"results": batchItems(res, withJobs)})
	writeBatchJSON(got, res, withJobs)
	if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
		t.Fatalf("%d jobs, with jobs %v:\n got %d %s\nwant %d %s", len(res), withJobs, got.Code, got.Body.Bytes(), want.Code, want.Body.Bytes())
	}
}

func sameAsWriteJSON(t *testing.T, j *timer.Job) {
	t.Helper()
	want, got := httptest.NewRecorder(), httptest.NewRecorder()
	writeJSON(want, 201, viewOf(j))
	writeJobJSON(got, 201, j)
	if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
		t.Fatalf("status, type %d %q, want %d %q", got.Code, got.Header().Get("Content-Type"), want.Code, want.Header().Get("Content-Type"))
	}
	if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
		t.Fatalf("job %+v:\n got %s\nwant %s", j, got.Body.Bytes(), want.Body.Bytes())
	}
}

// everyByte is every byte value, then every rune below U+0800, then
// U+2028 and U+2029 and the ends of each UTF-8 length.
func everyByte() string {
	var b strings.Builder
	for c := range 256 {
		b.WriteByte(byte(c))
	}
	for r := rune(0); r < 0x800; r++ {
		b.WriteRune(r)
	}
	b.WriteString("\u2027\u2028\u2029\u202a\uffff\U00010000\U0010ffff")
	return b.String()
}

func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", `"`, `\`, "\n", "\x00", "\x1b", "\x7f", "<", ">", "&", "é", "€", "\u2028", "\u2029", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80"}
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// BenchmarkWriteJob is the answer of a single schedule, and of a batch
// of 64, by hand and by encoding/json.
func BenchmarkWriteJob(b *testing.B) {
	base := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	j := &timer.Job{ID: 7_000_000_000_123, Topic: "orders", Key: "order-12345", Status: timer.StatusPending,
		DueAt: base, MaxAttempts: 3, CallbackURL: "http://localhost:9000/hook", Payload: []byte(`{"order":12345,"user":"u-9"}`),
		CreatedAt: base, UpdatedAt: base, Version: 1}
	b.Run("by_hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writeJobJSON(httptest.NewRecorder(), 201, j)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writeJSON(httptest.NewRecorder(), 201, viewOf(j))
		}
	})
	// A batch of 64 with its jobs in full, as the coalescing client asks.
	res := make([]timer.Result, 64)
	for i := range res {
		res[i] = timer.Result{Job: j, Created: true}
	}
	b.Run("batch_64_by_hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writeBatchJSON(httptest.NewRecorder(), res, true)
		}
	})
	b.Run("batch_64_encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writeJSON(httptest.NewRecorder(), 200, map[string]any{"results": batchItems(res, true)})
		}
	})
}
