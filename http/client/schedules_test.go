package client

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// A schedule reads its owner and skipped occurrences, and writes them
// back as the API does: skipped always, the rest when set.
func TestScheduleOwnerAndSkips(t *testing.T) {
	const head = `{"id":"4737272962162360321","cron":"* * * * * *","time_zone":"UTC","catch_up":"last","paused":false,` +
		`"key_prefix":"schedule:4737272962162360321:","next_fire_times":["2026-11-26T08:00:01.000Z"],` +
		`"job":{"topic":"reports","biz_id":"7","callback_url":"https://example.com/h","payload":{"r":1},"priority":"normal"},` +
		`"created_at":"2026-11-25T02:35:21.358Z","updated_at":"2026-11-26T08:00:00.120Z"`
	for _, tc := range []struct {
		body string
		want Schedule
	}{
		{head + `,"skipped":0}`, Schedule{}},
		{head + `,"owner":"orders","skipped":42,"last_skipped_at":"2026-11-26T08:00:00.120Z","last_skip_reason":"token orders holds 30 of its max_pending 30"}`,
			Schedule{Owner: "orders", Skipped: 42, LastSkippedAt: time.UnixMilli(1795680000120).UTC(), LastSkipReason: "token orders holds 30 of its max_pending 30"}},
	} {
		var s Schedule
		if err := json.Unmarshal([]byte(tc.body), &s); err != nil {
			t.Fatal(err)
		}
		if s.Owner != tc.want.Owner || s.Skipped != tc.want.Skipped || !s.LastSkippedAt.Equal(tc.want.LastSkippedAt) || s.LastSkipReason != tc.want.LastSkipReason {
			t.Errorf("read %+v\nfrom %s", s, tc.body)
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		json.Unmarshal([]byte(tc.body), &want)
		json.Unmarshal(out, &got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read  %s\nwrote %s", tc.body, out)
		}
	}
}
