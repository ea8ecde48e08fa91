package http_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// forecastAnswer is the body of GET /v1/topics/{topic}/forecast.
type forecastAnswer struct {
	Topic, From, To, Step string
	Complete              bool
	CountedTo             string
	Starts                []string
	Counts                []int64
}

func (e *apiEnv) forecast(t *testing.T, topic string, params ...string) (answer, forecastAnswer) {
	t.Helper()
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	a := e.call(t, "GET", "/v1/topics/"+topic+"/forecast?"+v.Encode(), "")
	var f forecastAnswer
	if a.status != http.StatusOK {
		return a, f
	}
	f.Topic, f.From, f.To, f.Step = a.body["topic"].(string), a.body["from"].(string), a.body["to"].(string), a.body["step"].(string)
	f.Complete = a.body["complete"].(bool)
	f.CountedTo, _ = a.body["counted_to"].(string)
	for _, b := range a.body["buckets"].([]any) {
		b := b.(map[string]any)
		f.Starts = append(f.Starts, b["start"].(string))
		f.Counts = append(f.Counts, int64(b["count"].(float64)))
	}
	return a, f
}

// The parameters: defaults, every bucket present, and a 400 naming the
// field for each bad one; an unknown topic is a 404.
func TestForecastParameters(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	e := newAPIEnv(t, tochttp.APIConfig{Now: func() time.Time { return now }}, nil)
	ok(t, e.call(t, "PUT", "/v1/topics/orders", `{"slots": 4}`), http.StatusCreated)
	ok(t, e.call(t, "POST", "/v1/jobs", `{"topic": "orders", "fire_at": "2030-01-02T05:30:00Z", `+cb+`}`), http.StatusCreated)

	// No parameters: from now, 24 buckets of an hour.
	_, f := e.forecast(t, "orders")
	if f.From != "2030-01-02T03:04:05.000Z" || f.To != "2030-01-03T03:04:05.000Z" || f.Step != "1h0m0s" || !f.Complete || len(f.Counts) != 24 {
		t.Fatalf("default forecast = %+v", f)
	}
	if f.Counts[2] != 1 || f.Starts[2] != "2030-01-02T05:04:05.000Z" {
		t.Errorf("default forecast bucket 2 = %d from %s, want 1 from 05:04:05", f.Counts[2], f.Starts[2])
	}
	// to without from; a last bucket cut short by to.
	_, f = e.forecast(t, "orders", "from", "2030-01-02T05:00:00+00:00", "to", "2030-01-02T05:45:00Z", "step", "20m")
	if want := []int64{0, 1, 0}; fmt.Sprint(f.Counts) != fmt.Sprint(want) || f.Starts[2] != "2030-01-02T05:40:00.000Z" {
		t.Errorf("forecast = %+v, want counts %v", f, want)
	}

	for _, tc := range []struct {
		name   string
		params []string
		field  string
	}{
		{"from not a time", []string{"from", "tomorrow"}, "from"},
		{"to not a time", []string{"to", "2030-01-02"}, "to"},
		{"to before from", []string{"from", "2030-01-02T05:00:00Z", "to", "2030-01-02T04:00:00Z"}, "to"},
		{"to at from", []string{"from", "2030-01-02T05:00:00Z", "to", "2030-01-02T05:00:00Z"}, "to"},
		{"step not a duration", []string{"step", "hourly"}, "step"},
		{"step under a second", []string{"step", "999ms"}, "step"},
		{"step negative", []string{"step", "-1h"}, "step"},
		{"step not whole ms", []string{"step", "1.0001s"}, "step"},
		{"too many buckets", []string{"from", "2030-01-02T00:00:00Z", "to", "2030-01-02T00:16:41Z", "step", "1s"}, "step"},
		{"unknown parameter", []string{"steps", "1h"}, "steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := e.forecast(t, "orders", tc.params...)
			a.wantError(t, http.StatusBadRequest, tochttp.CodeInvalid, tc.field)
		})
	}
	// Exactly the most buckets is fine.
	if _, f := e.forecast(t, "orders", "from", "2030-01-02T00:00:00Z", "to", "2030-01-02T00:16:40Z", "step", "1s"); len(f.Counts) != timer.MaxForecastBuckets {
		t.Errorf("%d buckets, want %d", len(f.Counts), timer.MaxForecastBuckets)
	}
	a := e.call(t, "GET", "/v1/topics/orders/forecast?step=1h&step=2h", "")
	a.wantError(t, http.StatusBadRequest, tochttp.CodeInvalid, "step")
	a, _ = e.forecast(t, "nobody")
	a.wantError(t, http.StatusNotFound, tochttp.CodeNotFound, "")
	a, _ = e.forecast(t, "Not_A_Topic")
	a.wantError(t, http.StatusBadRequest, tochttp.CodeInvalid, "topic")
}

// On the real stack (MariaDB, redis-server, the engine firing): a
// forecast counts exactly the pending jobs scheduled, a midnight-like
// spike at one instant and one job in every bucket, and not those of
// another topic, nor those cancelled, nor those fired and done.
func TestForecastMatchesScheduled(t *testing.T) {
	e := newStackEnv(t, stackOpts{})
	from := time.Now().Truncate(time.Minute).Add(time.Hour)
	const step, buckets, spike = 10 * time.Minute, 12, 6
	var cancelled []string
	for range 50 {
		e.schedule(t, "spiky", from.Add(spike*step), "")
	}
	want := make([]int64, buckets)
	want[spike] = 50
	for i := range buckets {
		e.schedule(t, "spiky", from.Add(time.Duration(i)*step+5*time.Minute), "")
		want[i]++
	}
	e.schedule(t, "spiky", from.Add(-time.Millisecond), "") // before from
	e.schedule(t, "spiky", from.Add(buckets*step), "")      // at to
	for range 5 {
		e.schedule(t, "calm", from.Add(spike*step), "")
	}
	for range 4 {
		cancelled = append(cancelled, e.schedule(t, "spiky", from.Add(spike*step), ""))
	}
	for _, id := range cancelled {
		ok(t, e.call(t, "DELETE", "/v1/jobs/"+id, ""), http.StatusOK)
	}
	// Jobs due now fire and are done: in a window from now they would
	// count while pending, and must not once done.
	now := time.Now()
	var done []string
	for range 3 {
		done = append(done, e.schedule(t, "spiky", now, ""))
	}
	e.waitArrived(t, "spiky", 3, 30*time.Second)
	for _, id := range done {
		waitStatus(t, e.apiEnv, id, "done")
	}

	_, f := e.forecast(t, "spiky", "from", from.Format(time.RFC3339Nano), "to", from.Add(buckets*step).Format(time.RFC3339Nano), "step", "10m")
	if fmt.Sprint(f.Counts) != fmt.Sprint(want) || !f.Complete {
		t.Errorf("forecast = %v (complete %t), want %v", f.Counts, f.Complete, want)
	}
	for i, s := range f.Starts {
		if want := from.Add(time.Duration(i) * step).UTC().Format("2006-01-02T15:04:05.000Z"); s != want {
			t.Errorf("bucket %d starts %s, want %s", i, s, want)
		}
	}
	_, f = e.forecast(t, "calm", "from", from.Format(time.RFC3339Nano), "to", from.Add(buckets*step).Format(time.RFC3339Nano), "step", "1h")
	if fmt.Sprint(f.Counts) != "[0 5]" {
		t.Errorf("calm forecast = %v, want [0 5]", f.Counts)
	}
	// The done jobs' window: nothing pending.
	_, f = e.forecast(t, "spiky", "from", now.Add(-time.Minute).Format(time.RFC3339Nano), "to", now.Add(time.Minute).Format(time.RFC3339Nano), "step", "1m")
	if fmt.Sprint(f.Counts) != "[0 0]" {
		t.Errorf("forecast of the done jobs' window = %v, want [0 0]", f.Counts)
	}
}

// waitStatus waits until job id has status.
func waitStatus(t *testing.T, e *apiEnv, id, status string, header ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := e.call(t, "GET", "/v1/jobs/"+id, "", header...)
		if a.body["status"] == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %v, want %s", id, a.body["status"], status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
