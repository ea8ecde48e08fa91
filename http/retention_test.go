package http_test

import (
	"encoding/json"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// wantRetention checks the retention a topic or its stats show, in ms.
func wantRetention(t *testing.T, a answer, want map[string]int64) {
	t.Helper()
	r, _ := a.body["retention"].(map[string]any)
	if len(r) != 5 {
		t.Fatalf("retention %v, want all five statuses: %s", a.body["retention"], a.raw)
	}
	for k, v := range want {
		if got, _ := r[k].(float64); int64(got) != v {
			t.Errorf("retention.%s = %v, want %d: %s", k, r[k], v, a.raw)
		}
	}
}

// A topic's retention: 0 keeps forever, a positive value that many ms,
// null (or left out of a PUT) the global retention; PATCH merges field
// by field; anything else is a 400 naming the field, and changes nothing.
func TestTopicRetentionSettings(t *testing.T) {
	global := timer.DefaultRetention()
	global.Purged = timer.KeepForever // --retain-purged 0
	e := newAPIEnv(t, tochttp.APIConfig{Retention: global}, nil)
	const day, month = int64(86_400_000), int64(2_592_000_000)

	// A topic that sets none shows the global retention.
	wantRetention(t, ok(t, e.call(t, "PUT", "/v1/topics/plain", `{}`), 201),
		map[string]int64{"done_ms": day, "cancelled_ms": day, "expired_ms": day, "dead_ms": month, "purged_ms": 0})

	own := map[string]int64{"done_ms": 1000, "cancelled_ms": day, "expired_ms": day, "dead_ms": 0, "purged_ms": 0}
	wantRetention(t, ok(t, e.call(t, "PUT", "/v1/topics/pay", `{"retention": {"done_ms": 1000, "dead_ms": 0, "expired_ms": null}}`), 201), own)
	wantRetention(t, ok(t, e.call(t, "GET", "/v1/topics/pay", ""), 200), own)
	// 0 is stored as forever, not as unset: the retirer keeps the topic's
	// dead letters whatever the global retention says.
	stored, err := e.store.Topic(t.Context(), "pay")
	if err != nil {
		t.Fatal(err)
	}
	if want := (timer.Retention{Done: time.Second, Dead: timer.KeepForever}); stored.Retention != want {
		t.Errorf("stored retention %+v, want %+v", stored.Retention, want)
	}
	// The list shows the retention in force of each topic.
	list := ok(t, e.call(t, "GET", "/v1/topics", ""), 200)
	for _, item := range list.body["topics"].([]any) {
		m := item.(map[string]any)
		raw, _ := json.Marshal(m)
		want := map[string]int64{"done_ms": day, "dead_ms": month}
		if m["name"] == "pay" {
			want = map[string]int64{"done_ms": 1000, "dead_ms": 0}
		}
		wantRetention(t, answer{body: m, raw: raw}, want)
	}

	// PATCH merges: a field given changes, the rest stay; null goes back
	// to the global value of that field; retention null resets them all.
	wantRetention(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"retention": {"cancelled_ms": 5000}}`), 200),
		map[string]int64{"done_ms": 1000, "cancelled_ms": 5000, "dead_ms": 0})
	wantRetention(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"weight": 2}`), 200),
		map[string]int64{"done_ms": 1000, "cancelled_ms": 5000, "dead_ms": 0})
	wantRetention(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"retention": {"done_ms": null}}`), 200),
		map[string]int64{"done_ms": day, "cancelled_ms": 5000, "dead_ms": 0})
	wantRetention(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"retention": null}`), 200),
		map[string]int64{"done_ms": day, "cancelled_ms": day, "dead_ms": month, "purged_ms": 0})
	// A topic may keep what the global retention drops, and the largest
	// value is taken.
	max := timer.MaxRetention.Milliseconds()
	wantRetention(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"retention": {"purged_ms": 1, "done_ms": `+itoa(max)+`}}`), 200),
		map[string]int64{"purged_ms": 1, "done_ms": max})
	// PUT replaces: leaving retention out goes back to the global one.
	wantRetention(t, ok(t, e.call(t, "PUT", "/v1/topics/pay", `{"retention": {"dead_ms": 60000}}`), 200),
		map[string]int64{"done_ms": day, "dead_ms": 60000, "purged_ms": 0})

	before := ok(t, e.call(t, "GET", "/v1/topics/pay", ""), 200)
	refused := []struct{ method, body, field string }{
		{"PUT", `{"retention": {"dead_ms": -1}}`, "retention.dead_ms"},
		{"PUT", `{"retention": {"done_ms": 1.5}}`, "retention.done_ms"},
		{"PUT", `{"retention": {"cancelled_ms": "1000"}}`, "retention.cancelled_ms"},
		{"PUT", `{"retention": {"expired_ms": ` + itoa(max+1) + `}}`, "retention.expired_ms"},
		{"PUT", `{"retention": {"done_ms": 1, "colour_ms": 1}}`, "retention.colour_ms"},
		{"PUT", `{"retention": 86400000}`, "retention"},
		{"PATCH", `{"retention": {"purged_ms": -86400000}}`, "retention.purged_ms"},
		{"PATCH", `{"retention": {"dead_ms": 1e3}}`, "retention.dead_ms"},
		{"PATCH", `{"retention": {"Dead_ms": 1}}`, "retention.Dead_ms"},
	}
	for _, r := range refused {
		t.Run(r.method+" "+r.body, func(t *testing.T) {
			e.call(t, r.method, "/v1/topics/pay", r.body).wantError(t, 400, tochttp.CodeInvalid, r.field)
		})
	}
	if after := ok(t, e.call(t, "GET", "/v1/topics/pay", ""), 200); string(after.raw) != string(before.raw) {
		t.Errorf("a refused change changed the topic:\n%s\n%s", before.raw, after.raw)
	}
}

// GET /v1/topics/{topic}/stats shows the retention in force and, for
// each status a job ends in, the rows held, the oldest one's end and the
// rows past retention, with estimates flagged; a status of which nothing
// is known shows as none.
func TestTopicStatsRetentionStorage(t *testing.T) {
	global := timer.DefaultRetention()
	e := newAPIEnv(t, tochttp.APIConfig{Retention: global}, nil)
	ended := time.Date(2026, 11, 20, 17, 3, 8, 551e6, time.UTC)
	e.stats.retention = timer.Retention{Done: time.Hour, Dead: timer.KeepForever}
	e.stats.storage = map[timer.Status]tochttp.StatusStorage{
		timer.StatusDone: {Rows: 2_500_000, RowsEstimated: true, OldestEnded: ended, PastRetention: 1_200_000, PastRetentionEstimated: true},
		timer.StatusDead: {Rows: 7, OldestEnded: ended},
	}
	a := ok(t, e.call(t, "GET", "/v1/topics/orders/stats", ""), 200)
	wantRetention(t, a, map[string]int64{"done_ms": 3_600_000, "cancelled_ms": 86_400_000, "dead_ms": 0, "purged_ms": 86_400_000})
	storage, _ := a.body["storage"].(map[string]any)
	want := map[string]map[string]any{
		"done":      {"rows": 2.5e6, "rows_estimated": true, "oldest_ended_at": "2026-11-20T17:03:08.551Z", "past_retention": 1.2e6, "past_retention_estimated": true},
		"dead":      {"rows": 7.0, "rows_estimated": false, "oldest_ended_at": "2026-11-20T17:03:08.551Z", "past_retention": 0.0, "past_retention_estimated": false},
		"cancelled": {"rows": 0.0, "rows_estimated": false, "oldest_ended_at": "", "past_retention": 0.0, "past_retention_estimated": false},
		"expired":   {"rows": 0.0, "oldest_ended_at": ""},
		"purged":    {"rows": 0.0, "oldest_ended_at": ""},
	}
	if len(storage) != len(want) {
		t.Fatalf("storage %v, want the five statuses: %s", a.body["storage"], a.raw)
	}
	for st, fields := range want {
		got, _ := storage[st].(map[string]any)
		for k, v := range fields {
			if got[k] != v {
				t.Errorf("storage.%s.%s = %v, want %v: %s", st, k, got[k], v, a.raw)
			}
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
